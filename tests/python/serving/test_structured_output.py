"""Structured output on the real models: response_format json_schema /
json_object and the `grammar` extension, end to end through `stride serve`.

Every constrained answer must parse and validate with the `jsonschema`
package (the oracle); grammar answers are checked with Python's `re`. A
grammar that admits every text must leave greedy decoding token for token as
it was, and malformed schemas or grammars get a 400 naming the problem.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/serving/test_structured_output.py
"""
import concurrent.futures as cf
import json
import re

import jsonschema
import openai
import pytest

from stride_server import GEMMA, SMOL, StrideServer
from structured_schemas import SCHEMAS

MODELS = {"smollm2": SMOL, "gemma3": GEMMA}
MAX_TOKENS = 320
# Greedy decoding on a recursive schema nests the same subtree until
# max_tokens; a frequency penalty (applied with the mask) lets it end.
EXTRA = {"tree": {"frequency_penalty": 2.0}}


@pytest.fixture(scope="module", params=sorted(MODELS))
def srv(request):
    s = StrideServer(MODELS[request.param], env={"STRIDE_MAX_BATCH": "8", "STRIDE_MAX_TOKENS_CAP": "1024"})
    s.key = request.param
    yield s
    s.__exit__(None, None, None)


def chat(srv, content, **extra):
    body = {"model": srv.model_name, "messages": [{"role": "user", "content": content}], "max_tokens": MAX_TOKENS,
            "temperature": 0}
    body.update(extra)
    status, _, raw = srv.post("/v1/chat/completions", body, timeout=600)
    return status, json.loads(raw)


def schema_format(name, schema):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def validate(schema, text):
    instance = json.loads(text)
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    v.validate(instance)
    return instance


def test_every_schema_answer_validates(srv):
    """54 schemas, greedy, eight at a time: every answer is complete JSON the schema accepts."""
    def one(case):
        name, schema, what = case
        status, r = chat(srv, f"Give me {what} as JSON.", response_format=schema_format(name, schema),
                         **EXTRA.get(name, {}))
        return name, schema, status, r

    failures = []
    with cf.ThreadPoolExecutor(8) as pool:
        for name, schema, status, r in pool.map(one, SCHEMAS):
            assert status == 200, (name, r)
            choice = r["choices"][0]
            text = choice["message"]["content"]
            if choice["finish_reason"] != "stop":
                failures.append((name, "finish_reason " + choice["finish_reason"], text))
                continue
            try:
                validate(schema, text)
            except (ValueError, jsonschema.ValidationError) as e:
                failures.append((name, str(e)[:300], text))
    assert not failures, f"{srv.key}: {len(failures)} of {len(SCHEMAS)} failed: {failures}"


def test_sampled_answers_validate(srv):
    """Sampling (temperature, top_p, top_k, seed) draws only allowed tokens too."""
    picks = [c for c in SCHEMAS if c[0] in ("person", "scores", "shape", "recipe", "mixed_list", "book")]
    for name, schema, what in picks:
        for seed in (1, 2):
            status, r = chat(srv, f"Give me {what} as JSON.", response_format=schema_format(name, schema),
                             temperature=0.9, top_p=0.95, top_k=50, seed=seed)
            assert status == 200, r
            choice = r["choices"][0]
            assert choice["finish_reason"] == "stop", (name, choice)
            validate(schema, choice["message"]["content"])


def test_json_object_mode(srv):
    """Any JSON object; a few-shot completion prompt, so that the small models stop after one."""
    prompt = 'Cat: {"name": "Tom", "age": 3}\nDog: {"name": "Rex", "age": 5}\nBird:'
    body = {"model": srv.model_name, "prompt": prompt, "max_tokens": 64, "temperature": 0, "response_format": {"type": "json_object"}}
    status, _, raw = srv.post("/v1/completions", body, timeout=600)
    assert status == 200, raw
    choice = json.loads(raw)["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    assert isinstance(json.loads(choice["text"]), dict), choice


def test_completions_endpoint_and_streaming(srv):
    """/v1/completions takes response_format too; streamed deltas add up to the same greedy answer."""
    name, schema, _ = next(c for c in SCHEMAS if c[0] == "weather")
    body = {"model": srv.model_name, "prompt": "The weather report in JSON:", "max_tokens": MAX_TOKENS, "temperature": 0,
            "response_format": schema_format(name, schema)}
    status, _, raw = srv.post("/v1/completions", body, timeout=600)
    assert status == 200, raw
    whole = json.loads(raw)["choices"][0]
    assert whole["finish_reason"] == "stop"
    validate(schema, whole["text"])

    status, _, raw = srv.post("/v1/completions", dict(body, stream=True), timeout=600)
    assert status == 200
    text, finish = "", None
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            c = json.loads(line[6:])["choices"][0]
            text += c.get("text") or ""
            finish = c.get("finish_reason") or finish
    assert (text, finish) == (whole["text"], "stop")


def test_official_client(srv):
    """The openai client's response_format and an extra_body grammar."""
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=600)
    name, schema, what = next(c for c in SCHEMAS if c[0] == "book")
    model = client.models.list().data[0].id
    r = client.chat.completions.create(model=model,
                                       messages=[{"role": "user", "content": f"Give me {what} as JSON."}],
                                       max_tokens=MAX_TOKENS, temperature=0,
                                       response_format=schema_format(name, schema))
    validate(schema, r.choices[0].message.content)
    r = client.chat.completions.create(model=model,
                                       messages=[{"role": "user", "content": "Is water wet? Answer yes or no."}],
                                       max_tokens=8, temperature=0, extra_body={"grammar": 'root ::= "yes" | "no"'})
    assert r.choices[0].message.content in ("yes", "no")
    assert r.choices[0].finish_reason == "stop"


GRAMMARS = [
    ('root ::= "yes" | "no"', r"yes|no", "Is the sun hot? Answer yes or no."),
    ('root ::= [0-9]{4} "-" [0-9]{2} "-" [0-9]{2}', r"[0-9]{4}-[0-9]{2}-[0-9]{2}", "What date is it today?"),
    ('root ::= item ("," " "? item){2}\nitem ::= [a-z]{1,12}', r"[a-z]{1,12}(, ?[a-z]{1,12}){2}",
     "Name three fruits."),
    ('root ::= "The answer is " ( "A" | "B" | "C" ) "."', r"The answer is [ABC]\.", "Pick A, B or C."),
    ('root ::= [A-Z] [a-z ]{0,30} "."', r"[A-Z][a-z ]{0,30}\.", "Say something short."),
    ('root ::= "\\u00e9t\\u00e9" | "caf\\u00e9" [s]?', "\u00e9t\u00e9|caf\u00e9s?", "A French word please."),
]


@pytest.mark.parametrize("grammar,pattern,prompt", GRAMMARS)
def test_grammar_field(srv, grammar, pattern, prompt):
    status, r = chat(srv, prompt, grammar=grammar, max_tokens=64)
    assert status == 200, r
    choice = r["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    assert re.fullmatch(pattern, choice["message"]["content"]), choice


def tokens_of(r, chat_mode):
    if chat_mode:
        return [t["token"] for t in r["choices"][0]["logprobs"]["content"]]
    return r["choices"][0]["logprobs"]["tokens"]


@pytest.mark.parametrize("chat_mode", [True, False])
def test_grammar_that_admits_everything_changes_nothing(srv, chat_mode):
    """Greedy with `root ::= .*` (any text; the end is always allowed) equals unconstrained greedy, token for token."""
    prompts = ["Tell me about the moon.", "Write a list of three colours.", "What is 2 + 2?"]
    for p in prompts:
        if chat_mode:
            base = {"model": srv.model_name, "messages": [{"role": "user", "content": p}], "max_tokens": 48, "temperature": 0,
                    "logprobs": True}
            path = "/v1/chat/completions"
        else:
            base = {"model": srv.model_name, "prompt": p, "max_tokens": 48, "temperature": 0, "logprobs": 0}
            path = "/v1/completions"
        free = json.loads(srv.post(path, base, timeout=600)[2])
        constrained = json.loads(srv.post(path, dict(base, grammar="root ::= .*"), timeout=600)[2])
        assert tokens_of(constrained, chat_mode) == tokens_of(free, chat_mode), p
        assert constrained["choices"][0]["finish_reason"] == free["choices"][0]["finish_reason"]
        # The second request may find the prompt in the prefix cache (cached_tokens); the counts are the same.
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            assert constrained["usage"][key] == free["usage"][key], key


BAD = [
    ({"response_format": "json"}, "response_format", "must be an object"),
    ({"response_format": {"type": "xml"}}, "response_format", "must be 'text', 'json_object' or 'json_schema'"),
    ({"response_format": {"type": "json_schema"}}, "response_format", "json_schema' must be an object"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": 3, "schema": {}}}}, "response_format",
     "name' must be a string"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {}, "strict": "yes"}}},
     "response_format",
     "strict' must be a boolean"),
    ({"response_format": schema_format("s", {"type": "string", "contentMediaType": "text/html"})},
     "response_format", "the keyword 'contentMediaType' is not supported with strict: true"),
    ({"response_format": schema_format("s", {"type": "array", "uniqueItems": True})}, "response_format",
     "'uniqueItems' is not supported"),
    ({"response_format": schema_format("s", {"$ref": "#/$defs/nope"})}, "response_format", "does not resolve"),
    ({"response_format": schema_format("s", {"type": "strng"})}, "response_format", "unknown type 'strng'"),
    ({"response_format": schema_format("s", {"type": "string", "maxLength": 10 ** 9})}, "response_format",
     "above 1000 is not supported"),
    ({"response_format": schema_format("s", {"type": "string", "pattern": "(?<=a)b"})}, "response_format",
     "lookaround"),
    ({"response_format": schema_format("s", {"type": "integer", "minimum": 5, "maximum": 1})}, "response_format",
     "satisfies the minimum/maximum"),
    ({"response_format": schema_format("s", {"properties": {"a": {"type": "integer"}}, "required": ["b"]})},
     "response_format", "'b' is required but not among 'properties'"),
    ({"response_format": schema_format("s", {"$ref": "#"})}, "response_format", "can never finish"),
    ({"response_format": schema_format("s", {"allOf": [
        {"properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False},
        {"properties": {"b": {"type": "integer"}}, "required": ["b"], "additionalProperties": False}]})},
     "response_format", "no object satisfies every part ('a' is required, but a part does not allow it)"),
    ({"grammar": 42}, "grammar", "must be a string"),
    ({"grammar": ""}, "grammar", "must not be empty"),
    ({"grammar": 'root ::= "a'}, "grammar", "line 1, column 12: unterminated string literal"),
    ({"grammar": "root ::= x"}, "grammar", "refers to 'x', which is not defined"),
    ({"grammar": 'root ::= root "a" | "b"'}, "grammar", "left-recursive"),
    ({"grammar": 'root ::= "a"{5000}'}, "grammar", "limited to 1000"),
    ({"grammar": "root ::= " + "(" * 500 + '"a"' + ")" * 500}, "grammar", "nested too deeply"),
    ({"grammar": "root ::= " + ' "a"{0,1000}' * 300}, "grammar", "too large once expanded"),
    ({"grammar": 'root ::= "a"', "response_format": {"type": "json_object"}}, "grammar", "not both"),
    ({"grammar": "root ::= r0\n" + "".join(f'r{i} ::= r{i + 1} "x" | r{i + 1} "y"\n' for i in range(30)) +
      'r30 ::= "z"'}, "grammar", "too ambiguous"),
]


@pytest.mark.parametrize("extra,param,message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_schemas_and_grammars_are_400(srv, extra, param, message):
    status, r = chat(srv, "hi", max_tokens=4, **extra)
    assert status == 400, r
    assert r["error"]["param"] == param, r
    assert message in r["error"]["message"], r


def test_hostile_schemas_do_not_hurt_the_server(srv):
    """Deep, wide and self-referencing schemas are answered quickly (200 or 400), and the server stays healthy."""
    deep = {"type": "integer"}
    for _ in range(40):
        deep = {"type": "array", "items": deep, "maxItems": 1}
    wide = {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(400)}}
    many = {"enum": [f"value-{i}" for i in range(20000)]}
    rec = {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]},
                     "b": {"type": "array", "items": {"$ref": "#/$defs/a"}, "maxItems": 2}}, "$ref": "#/$defs/a"}
    for schema in (deep, wide, many, rec, {"properties": {"a": {"properties": {"b": {"properties": {}}}}}}):
        status, r = chat(srv, "hi", max_tokens=8, response_format=schema_format("h", schema))
        assert status in (200, 400), r
    status, r = chat(srv, "hi", max_tokens=4, response_format=schema_format("h", {"type": "string"}))
    assert status == 200
    assert srv.get("/health")[0] == 200


def test_logprobs_list_only_allowed_tokens(srv):
    """With a grammar of two answers, the alternatives are the allowed tokens only, each a finite number."""
    status, r = chat(srv, "Yes or no?", grammar='root ::= "yes" | "no"', max_tokens=4, logprobs=True,
                     top_logprobs=5)
    assert status == 200, r
    first = r["choices"][0]["logprobs"]["content"][0]
    assert 1 <= len(first["top_logprobs"]) <= 5
    for alt in first["top_logprobs"]:
        assert isinstance(alt["logprob"], float) and alt["logprob"] <= 0
        assert "yes".startswith(alt["token"]) or "no".startswith(alt["token"]), alt
