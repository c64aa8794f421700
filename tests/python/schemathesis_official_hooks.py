"""schemathesis hooks for runs of OpenAI's published spec against `stride serve`
(SCHEMATHESIS_HOOKS=schemathesis_official_hooks, with tests/python on PYTHONPATH).

Requests stay cheap and reach the model: a valid token limit above the cap is
lowered to it (chat and completions STRIDE_ST_MAX_TOKENS, default 4;
/v1/responses 16, the official minimum of max_output_tokens) and a request
without one, or with null, gets the cap; a string `model` becomes the served name
(STRIDE_ST_MODEL). Both keep a valid request valid and an invalid one invalid.
Embeddings asked as base64 are asked as float: OpenAI answers base64 with
strings where its spec types a list of numbers. Completions are not streamed:
the spec documents no stream for that route (OpenAI's chunks are checked in
test_official_schemas.py instead).

The check `openai_error_shape`: every 4xx body is OpenAI's error object.
"""
import json
import os

import schemathesis

import official_spec

CAP = int(os.environ.get("STRIDE_ST_MAX_TOKENS", "4"))
RESPONSES_CAP = 16
MODEL = os.environ.get("STRIDE_ST_MODEL", "")
SCHEMA_MAX = 1 << 31
LIMITS = {"/completions": (["max_tokens"], CAP),
          "/chat/completions": (["max_completion_tokens", "max_tokens"], CAP),
          "/responses": (["max_output_tokens"], RESPONSES_CAP)}


def _count(v):
    return isinstance(v, int) and not isinstance(v, bool)


@schemathesis.hook
def before_call(context, case, kwargs):
    path = case.operation.path
    body = case.body
    if not isinstance(body, dict):
        return
    if MODEL and isinstance(body.get("model"), str):
        body["model"] = MODEL
    if path == "/embeddings" and body.get("encoding_format") == "base64":
        body["encoding_format"] = "float"
    if path == "/completions" and body.get("stream") is True:
        body["stream"] = False
    if path not in LIMITS:
        return
    keys, cap = LIMITS[path]
    present = [k for k in keys if k in body]
    for k in present:
        # null is valid (no limit, so the server's cap): it becomes the cap too.
        if body[k] is None or (_count(body[k]) and cap < body[k] <= SCHEMA_MAX):
            body[k] = cap
    if not present:
        body[keys[0]] = cap


@schemathesis.check
def openai_error_shape(ctx, response, case):
    """A 4xx answer carries OpenAI's error object (message, type, param, code)."""
    if not 400 <= response.status_code < 500:
        return
    try:
        body = json.loads(response.content)
    except ValueError as e:
        raise AssertionError(f"{response.status_code} body is not JSON: {response.content[:200]!r}") from e
    errs = official_spec.errors("ErrorResponse", body)
    if errs:
        raise AssertionError(f"{response.status_code} body is not OpenAI's ErrorResponse: {errs[:3]}")
