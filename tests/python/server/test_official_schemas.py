"""Every response body and every streamed chunk or event of `stride serve`, sent
through raw HTTP, against OpenAI's published OpenAPI description (the oracle:
tests/python/official_spec.py): chat completions, completions, /v1/responses,
embeddings, the model list and retrieval, and error bodies.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/server/test_official_schemas.py
"""
import base64
import json
import struct
import urllib.parse

import pytest

import official_spec as spec
from stride_server import SMOL, StrideServer

NAMES = ["smol", "team/default"]
MODEL = NAMES[0]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
JSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": {
    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}}}
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--served-model-name", *NAMES])
    yield s
    s.__exit__(None, None, None)


def post_json(srv, path, body, status=200):
    st, headers, raw = srv.post(path, body)
    assert st == status, raw[:1000]
    assert headers.get("Content-Type", "").startswith("application/json"), headers
    return json.loads(raw)


def sse(srv, path, body, done_marker=True):
    """The data objects of an SSE response, with each block's `event:` name (or None)."""
    st, headers, raw = srv.post(path, body)
    assert st == 200, raw[:1000]
    assert headers.get("Content-Type", "").startswith("text/event-stream"), headers
    out, done = [], False
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        name = next((ln[7:] for ln in block.split("\n") if ln.startswith("event: ")), None)
        data = "".join(ln[6:] for ln in block.split("\n") if ln.startswith("data: "))
        if data == "[DONE]":
            done = True
            continue
        assert not done, "data after [DONE]"
        out.append((name, json.loads(data)))
    assert done == done_marker, "the stream's [DONE] marker"
    return out


# ---- chat completions ----

CHAT_BODIES = {
    "plain": {"messages": HI, "max_tokens": 4},
    "logprobs": {"messages": HI, "max_tokens": 4, "logprobs": True, "top_logprobs": 2},
    "json_schema": {"messages": [{"role": "user", "content": "A number as JSON"}], "max_tokens": 12,
                    "response_format": JSON_FORMAT},
    "tool_call": {"messages": [{"role": "user", "content": "Weather in Paris?"}], "max_tokens": 40, "tools": TOOLS,
                  "tool_choice": "required"},
    "system_and_stop": {"messages": [{"role": "system", "content": "Be brief."}] + HI, "max_tokens": 6,
                        "stop": ["\n"], "seed": 3, "temperature": 0.7},
}


@pytest.mark.parametrize("variant", list(CHAT_BODIES))
def test_chat_completion_body(srv, variant):
    body = post_json(srv, "/v1/chat/completions", dict(CHAT_BODIES[variant], model=MODEL))
    spec.assert_valid("CreateChatCompletionResponse", body)
    choice = body["choices"][0]
    assert choice["message"]["refusal"] is None
    if variant == "logprobs":
        assert choice["logprobs"]["content"] and choice["logprobs"]["refusal"] is None
    if variant == "tool_call":
        assert choice["message"]["tool_calls"] and choice["finish_reason"] in ("tool_calls", "length"), choice


@pytest.mark.parametrize("variant", ["plain", "logprobs", "tool_call"])
def test_chat_stream_chunks(srv, variant):
    body = dict(CHAT_BODIES[variant], model=MODEL, stream=True, stream_options={"include_usage": True})
    chunks = [c for _, c in sse(srv, "/v1/chat/completions", body)]
    for c in chunks:
        spec.assert_valid("CreateChatCompletionStreamResponse", c, f"the chunk {c}")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert len(finishes) == 1, finishes
    if variant == "logprobs":
        lps = [ch["logprobs"] for c in chunks for ch in c["choices"] if ch["logprobs"]]
        assert lps and all(lp["refusal"] is None for lp in lps)


# ---- completions ----

@pytest.mark.parametrize("extra", [{}, {"logprobs": 2}, {"stop": [" "], "seed": 1, "temperature": 0.9},
                                   {"echo": True, "logprobs": 1}, {"echo": True, "logprobs": 0, "max_tokens": 0}])
def test_completion_body(srv, extra):
    body = post_json(srv, "/v1/completions", dict({"model": MODEL, "prompt": "Once upon a", "max_tokens": 4}, **extra))
    spec.assert_valid("CreateCompletionResponse", body)


@pytest.mark.parametrize("extra", [{}, {"logprobs": 2}])
def test_completion_stream_chunks(srv, extra):
    body = dict({"model": MODEL, "prompt": [1, 2, 3], "max_tokens": 4, "stream": True,
                 "stream_options": {"include_usage": True}}, **extra)
    chunks = [c for _, c in sse(srv, "/v1/completions", body)]
    for c in chunks:
        spec.assert_completion_chunk_valid(c)
    assert [ch["finish_reason"] is None for c in chunks for ch in c["choices"]][-1] is False
    assert chunks[-1]["usage"]["completion_tokens"] > 0


# ---- /v1/responses ----

RESPONSES_BODIES = {
    "plain": {"input": "Hi", "max_output_tokens": 16},
    "instructions_metadata_user": {"instructions": "Be brief.", "input": [{"role": "user", "content": "Hi"}],
                                   "max_output_tokens": 16, "metadata": {"k": "v"}, "user": "user-1234",
                                   "temperature": 0.5, "top_p": 0.9},
    "json_schema": {"input": "A number as JSON", "max_output_tokens": 16, "text": {"format": {
        "type": "json_schema", "name": "answer", "strict": True, "schema": JSON_FORMAT["json_schema"]["schema"]}}},
}


@pytest.mark.parametrize("variant", list(RESPONSES_BODIES))
def test_response_body(srv, variant):
    req = dict(RESPONSES_BODIES[variant], model=MODEL)
    body = post_json(srv, "/v1/responses", req)
    spec.assert_valid("Response", body)
    part = body["output"][0]["content"][0]
    assert part["type"] == "output_text" and part["logprobs"] == []
    assert body.get("user") == req.get("user")
    details = body["usage"]["input_tokens_details"]
    assert details["cache_write_tokens"] >= 0 and details["cached_tokens"] >= 0


@pytest.mark.parametrize("variant", list(RESPONSES_BODIES))
def test_response_stream_events(srv, variant):
    events = sse(srv, "/v1/responses", dict(RESPONSES_BODIES[variant], model=MODEL, stream=True), done_marker=False)
    for name, ev in events:
        assert name == ev["type"]
        spec.assert_stream_event_valid(ev)
    assert [ev["sequence_number"] for _, ev in events] == list(range(len(events)))
    assert events[0][1]["type"] == "response.created"
    last = events[-1][1]
    assert last["type"] in ("response.completed", "response.incomplete"), last["type"]
    spec.assert_valid("Response", last["response"], "the final response object")


# ---- requests the server ended (request_timeout_s) ----

@pytest.fixture(scope="module")
def hasty():
    """A server whose requests all time out: every deadline passes within the first step."""
    s = StrideServer(SMOL, extra_args=["--kv-budget", "16M", "--served-model-name", MODEL, "--request-timeout", "0.001"])
    yield s
    s.__exit__(None, None, None)


TIMED_OUT = {"/v1/chat/completions": {"messages": HI, "max_tokens": 64},
             "/v1/completions": {"prompt": "Once upon a", "max_tokens": 64},
             "/v1/responses": {"input": "Hi", "max_output_tokens": 64}}


def finished_choices(objects):
    return [ch for o in objects for ch in o.get("choices", []) if ch.get("finish_reason")]


@pytest.mark.parametrize("path", list(TIMED_OUT))
def test_timed_out_body_keeps_to_the_spec(hasty, path):
    body = post_json(hasty, path, dict(TIMED_OUT[path], model=MODEL))
    if path == "/v1/responses":
        spec.assert_valid("Response", body)
        assert body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "max_output_tokens"}
        assert body["stride_finish_reason"] == "timeout"
        return
    spec.assert_valid("CreateChatCompletionResponse" if "chat" in path else "CreateCompletionResponse", body)
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "length" and choice["stride_finish_reason"] == "timeout", choice


@pytest.mark.parametrize("path", list(TIMED_OUT))
def test_timed_out_stream_keeps_to_the_spec(hasty, path):
    responses = path == "/v1/responses"
    events = [ev for _, ev in sse(hasty, path, dict(TIMED_OUT[path], model=MODEL, stream=True),
                                  done_marker=not responses)]
    if responses:
        for ev in events:
            spec.assert_stream_event_valid(ev)
        assert events[-1]["type"] == "response.incomplete"
        assert events[-1]["response"]["stride_finish_reason"] == "timeout"
        return
    for c in events:
        if "chat" in path:
            spec.assert_valid("CreateChatCompletionStreamResponse", c, f"the chunk {c}")
        else:
            spec.assert_completion_chunk_valid(c)
    (choice,) = finished_choices(events)
    assert choice["finish_reason"] == "length" and choice["stride_finish_reason"] == "timeout", choice


# ---- embeddings ----

@pytest.mark.parametrize("inp", ["Hello", ["Hello", "world"], [1, 2, 3], [[1, 2], [3, 4, 5]]])
def test_embeddings_body(srv, inp):
    body = post_json(srv, "/v1/embeddings", {"model": MODEL, "input": inp})
    spec.assert_valid("CreateEmbeddingResponse", body)


def test_base64_embeddings_decode_to_the_float_ones(srv):
    """OpenAI answers encoding_format "base64" with strings, where its spec types a float list: the
    decoded body is what the schema checks."""
    floats = post_json(srv, "/v1/embeddings", {"model": MODEL, "input": ["Hello", "world"]})
    body = post_json(srv, "/v1/embeddings", {"model": MODEL, "input": ["Hello", "world"], "encoding_format": "base64"})
    for item, ref in zip(body["data"], floats["data"]):
        raw = base64.b64decode(item["embedding"])
        item["embedding"] = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        assert item["embedding"] == pytest.approx(ref["embedding"], abs=1e-6)
    spec.assert_valid("CreateEmbeddingResponse", body)


# ---- models ----

def test_model_list(srv):
    body = json.loads(srv.get("/v1/models")[2])
    spec.assert_valid(spec.response_schema_name("get", "/models"), body)
    assert [m["id"] for m in body["data"]] == NAMES


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("escape", [False, True])
def test_model_retrieve(srv, name, escape):
    path = "/v1/models/" + (urllib.parse.quote(name, safe="") if escape else name)
    st, _, raw = srv.get(path)
    assert st == 200, raw
    body = json.loads(raw)
    spec.assert_valid(spec.response_schema_name("get", "/models/{model}"), body)
    assert body["id"] == name and body["object"] == "model"


# ---- errors ----

ERRORS = [
    ("GET", "/v1/models/gpt-unknown", None, 404),
    ("GET", "/v1/models/", None, 404),
    ("POST", "/v1/models/smol", {}, 405),
    ("DELETE", "/v1/models/smol", None, 405),
    ("GET", "/v1/no-such-route", None, 404),
    ("GET", "/v1/chat/completions", None, 405),
    ("POST", "/v1/chat/completions", b"{not json", 400),
    ("POST", "/v1/chat/completions", {"model": MODEL, "messages": "Hi"}, 400),
    ("POST", "/v1/chat/completions", {"model": "gpt-unknown", "messages": HI}, 404),
    ("POST", "/v1/completions", {"model": MODEL, "prompt": "Hi", "max_tokens": -1}, 400),
    ("POST", "/v1/responses", {"model": MODEL, "input": 5}, 400),
    ("POST", "/v1/embeddings", {"model": MODEL, "input": {}}, 400),
]


@pytest.mark.parametrize("method,path,body,status", ERRORS)
def test_error_bodies(srv, method, path, body, status):
    st, headers, raw = srv.request(method, path, body)
    assert st == status, raw[:500]
    assert headers.get("Content-Type", "").startswith("application/json"), headers
    spec.assert_valid("ErrorResponse", json.loads(raw))


def test_unknown_model_is_openai_model_not_found(srv):
    err = json.loads(srv.get("/v1/models/gpt-unknown")[2])["error"]
    assert err["code"] == "model_not_found" and err["type"] == "invalid_request_error" and "gpt-unknown" in err["message"]
