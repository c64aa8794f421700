"""schemathesis hooks for runs against `stride serve` (SCHEMATHESIS_HOOKS=schemathesis_hooks,
with tests/python on PYTHONPATH).

Generation requests are kept short: a valid max_tokens / max_completion_tokens
above STRIDE_ST_MAX_TOKENS (default 4) is lowered to it, and a request without
either gets max_tokens = STRIDE_ST_MAX_TOKENS (chat completions otherwise run
to the cap). Values outside the schema's range are left alone, so negative
cases stay negative, and a lowered value is still valid, so positive cases
stay positive.
"""
import os

import schemathesis

CAP = int(os.environ.get("STRIDE_ST_MAX_TOKENS", "4"))
SCHEMA_MAX = 4096
GENERATION = ("/v1/completions", "/v1/chat/completions", "/v1/responses")
RESPONSES_LEAST = 16  # OpenAI's least max_output_tokens


def _valid_count(v, least=1):
    return isinstance(v, int) and not isinstance(v, bool) and least <= v <= SCHEMA_MAX


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path not in GENERATION or not isinstance(case.body, dict):
        return
    body = case.body
    # A generated model name is almost never served (a 404): a string becomes the served one, so requests reach
    # the model; a missing or non-string model stays what it was.
    if os.environ.get("STRIDE_ST_MODEL") and isinstance(body.get("model"), str):
        body["model"] = os.environ["STRIDE_ST_MODEL"]
    cap, least = CAP, 1
    if case.operation.path == "/v1/responses":
        keys = ["max_output_tokens"]
        cap = least = max(CAP, RESPONSES_LEAST)
    else:
        keys = ["max_tokens"] + (["max_completion_tokens"] if case.operation.path.endswith("chat/completions") else [])
    present = [k for k in keys if body.get(k) is not None]
    for k in present:
        if _valid_count(body[k], least) and body[k] > cap:
            body[k] = cap
    if not present:
        body[keys[0]] = cap
