"""Tool calling on the real models through the official `openai` client:
`tools`, `tool_choice` (auto, none, required, a named function) and
`parallel_tool_calls` in the generic format (docs/serving.md, "Tools").

Required and named calls must always come back as `tool_calls` whose
arguments validate against the tool's parameter schema with the `jsonschema`
package (the oracle), over many schemas; `none` never returns calls; `auto`
returns text or valid calls; streamed deltas, accumulated by the client's own
stream helper, equal the non-streamed answer (greedy); a conversation with a
tool result continues; malformed tool fields get a 400 naming the field.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/serving/test_tools.py
"""
import concurrent.futures as cf
import json

import jsonschema
import openai
import pytest

from stride_server import GEMMA, SMOL, StrideServer
from structured_schemas import SCHEMAS

MODELS = {"smollm2": SMOL, "gemma3": GEMMA}
MAX_TOKENS = 320
EXTRA = {"tree": {"frequency_penalty": 2.0}}  # greedy on a recursive schema needs a nudge to end

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris", "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a timezone.",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string", "maxLength": 40}},
                   "required": ["tz"], "additionalProperties": False}}}
SEARCH = {"type": "function", "function": {
    "name": "search_web", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "maxLength": 60},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["query"], "additionalProperties": False}}}
NO_ARGS = {"type": "function", "function": {"name": "get_random_number"}}
BASIC = [WEATHER, TIME, SEARCH, NO_ARGS]

# The structured-output schemas whose instances are objects, each as a tool.
OBJECT_SCHEMAS = [c for c in SCHEMAS
                  if c[1].get("type") == "object" or c[0] in ("all_of", "shape", "pet_or_car", "tree")]


def tool_of(name, schema, what):
    return {"type": "function", "function": {"name": "make_" + name, "description": f"Record {what}.",
                                             "parameters": schema}}


def schema_of(tools, name):
    f = next(t["function"] for t in tools if t["function"]["name"] == name)
    return f.get("parameters", {"type": "object", "properties": {}, "additionalProperties": False})


def validate(schema, arguments):
    instance = json.loads(arguments)
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    v.validate(instance)
    return instance


@pytest.fixture(scope="module", params=sorted(MODELS))
def srv(request):
    s = StrideServer(MODELS[request.param], env={"STRIDE_MAX_BATCH": "8", "STRIDE_MAX_TOKENS_CAP": "1024"})
    s.key = request.param
    s.client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=600)
    s.model = s.client.models.list().data[0].id
    yield s
    s.__exit__(None, None, None)


def ask(srv, content, tools, **kw):
    kw.setdefault("max_tokens", MAX_TOKENS)
    kw.setdefault("temperature", 0)
    messages = content if isinstance(content, list) else [{"role": "user", "content": content}]
    return srv.client.chat.completions.create(model=srv.model, messages=messages, tools=tools, **kw)


def calls_of(message):
    return [(c.function.name, c.function.arguments) for c in (message.tool_calls or [])]


def check_calls(r, tools, at_most=None):
    """Every call names a tool and its arguments validate; the shape is OpenAI's."""
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    m = choice.message
    assert m.content is None and m.tool_calls, m
    assert at_most is None or len(m.tool_calls) <= at_most, m
    for c in m.tool_calls:
        assert c.type == "function" and c.id.startswith("call_") and len(c.id) > 10
        validate(schema_of(tools, c.function.name), c.function.arguments)
    assert len({c.id for c in m.tool_calls}) == len(m.tool_calls)
    return m.tool_calls


def test_named_calls_validate_on_many_schemas(srv):
    """A named function among distractors, once per schema, eight at a time: always that call, always valid."""
    def one(case):
        name, schema, what = case
        tools = [WEATHER, tool_of(name, schema, what), TIME]
        r = ask(srv, f"Give me {what}.", tools, tool_choice={"type": "function", "function": {"name": "make_" + name}},
                **EXTRA.get(name, {}))
        return name, tools, r

    failures = []
    with cf.ThreadPoolExecutor(8) as pool:
        for name, tools, r in pool.map(one, OBJECT_SCHEMAS):
            try:
                calls = check_calls(r, tools, at_most=1)
                assert calls[0].function.name == "make_" + name
            except (AssertionError, ValueError, jsonschema.ValidationError) as e:
                failures.append((name, str(e)[:300]))
    assert len(OBJECT_SCHEMAS) >= 35
    assert not failures, f"{srv.key}: {len(failures)} of {len(OBJECT_SCHEMAS)} failed: {failures}"


PROMPTS = ["What's the weather like in Paris?", "What time is it in Tokyo?", "Find recent news about the Moon.",
           "Pick a random number for me.", "Weather in Oslo in fahrenheit, and the time in Lima?"]


def test_required_calls_validate(srv):
    """tool_choice required: calls to the offered tools only, valid arguments, for every prompt."""
    for p in PROMPTS:
        r = ask(srv, p, BASIC, tool_choice="required")
        check_calls(r, BASIC)
    # A long list of tools (not the recursive one, which greedy nests until max_tokens).
    many = BASIC + [tool_of(*c) for c in OBJECT_SCHEMAS[:14] if c[0] != "tree"]
    # A small model may call every tool in parallel; each call is bounded by its
    # schema, but together they need more than the default budget.
    r = ask(srv, PROMPTS[0], many, tool_choice="required", max_tokens=1024)
    check_calls(r, many)


def test_sampled_required_calls_validate(srv):
    for seed in (1, 2, 3):
        r = ask(srv, PROMPTS[4], BASIC, tool_choice="required", temperature=1.0, top_p=0.95, seed=seed)
        check_calls(r, BASIC)


def test_parallel_tool_calls_false_makes_one_call(srv):
    for p in PROMPTS:
        r = ask(srv, p, BASIC, tool_choice="required", parallel_tool_calls=False)
        assert len(check_calls(r, BASIC, at_most=1)) == 1


def test_none_never_calls(srv):
    for p in PROMPTS:
        r = ask(srv, p, BASIC, tool_choice="none", max_tokens=64)
        choice = r.choices[0]
        assert not choice.message.tool_calls
        assert isinstance(choice.message.content, str)
        assert choice.finish_reason in ("stop", "length")


def test_auto_returns_text_or_valid_calls(srv):
    kinds = set()
    for p in PROMPTS + ["Hello! How are you today?", "Write one sentence about cats."]:
        for kw in ({}, {"temperature": 0.8, "seed": 7}):
            r = ask(srv, p, BASIC, max_tokens=128, **kw)
            choice = r.choices[0]
            if choice.message.tool_calls:
                kinds.add("calls")
                if choice.finish_reason != "length":
                    check_calls(r, BASIC)
            else:
                kinds.add("text")
                assert isinstance(choice.message.content, str)
                if choice.finish_reason == "stop":
                    assert not choice.message.content.lstrip().startswith("{"), choice
                assert choice.finish_reason in ("stop", "length")
    assert kinds, "no answers"


def stream_final(srv, content, tools, **kw):
    """The client's own stream helper accumulates the deltas into a completion."""
    messages = [{"role": "user", "content": content}]
    with srv.client.chat.completions.stream(model=srv.model, messages=messages, tools=tools,
                                            max_tokens=MAX_TOKENS, temperature=0, **kw) as stream:
        events = [e.type for e in stream]
        try:
            final = stream.get_final_completion()
        except openai.LengthFinishReasonError as e:  # a text answer cut by max_tokens
            final = e.completion
    return final, events


@pytest.mark.parametrize("choice", ["required", "named", "auto", "single"])
def test_streamed_deltas_add_up_to_the_same_calls(srv, choice):
    tool_choice = {"named": {"type": "function", "function": {"name": "get_weather"}},
                   "single": "required"}.get(choice, choice)
    extra = {"parallel_tool_calls": False} if choice == "single" else {}
    for p in PROMPTS[:3] + [PROMPTS[4]]:
        whole = ask(srv, p, BASIC, tool_choice=tool_choice, **extra).choices[0]
        final, events = stream_final(srv, p, BASIC, tool_choice=tool_choice, **extra)
        got = final.choices[0]
        assert got.finish_reason == whole.finish_reason, (p, got, whole)
        assert calls_of(got.message) == calls_of(whole.message), p
        assert (got.message.content or None) == (whole.message.content or None), p
        if whole.message.tool_calls:
            assert "tool_calls.function.arguments.delta" in events
            assert len({c.id for c in got.message.tool_calls}) == len(got.message.tool_calls)


def test_raw_stream_deltas_have_openais_shape(srv):
    """First delta of a call: index, id, type, name, empty arguments; then argument fragments only."""
    body = {"model": srv.model_name, "messages": [{"role": "user", "content": PROMPTS[4]}], "tools": BASIC, "tool_choice": "required",
            "max_tokens": MAX_TOKENS, "temperature": 0, "stream": True}
    status, _, raw = srv.post("/v1/chat/completions", body, timeout=600)
    assert status == 200
    chunks = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    seen = {}
    for ch in chunks:
        d = ch["choices"][0]["delta"]
        for tc in d.get("tool_calls", []):
            i = tc["index"]
            if i not in seen:
                assert set(tc) == {"index", "id", "type", "function"} and tc["type"] == "function"
                assert tc["function"]["arguments"] == "" and tc["function"]["name"]
                assert i == len(seen)
                seen[i] = [tc["function"]["name"], ""]
            else:
                assert set(tc) == {"index", "function"} and set(tc["function"]) == {"arguments"}
                seen[i][1] += tc["function"]["arguments"]
        assert "content" not in d or d["content"] in ("", None)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    for name, args in seen.values():
        validate(schema_of(BASIC, name), args)


def test_multi_turn_with_a_tool_result(srv):
    """The call and its result go back in; the next turn answers (text or another valid call)."""
    first = ask(srv, "What's the weather like in Paris?", BASIC,
                tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = check_calls(first, BASIC)[0]
    messages = [{"role": "user", "content": "What's the weather like in Paris?"},
                first.choices[0].message,  # the client's own message object, as its docs pass it back
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 18, "sky": "sunny"})}]
    for choice in ("auto", "none"):
        r = ask(srv, messages, BASIC, tool_choice=choice, max_tokens=64)
        c = r.choices[0]
        if c.message.tool_calls:
            assert choice == "auto"
            if c.finish_reason != "length":
                check_calls(r, BASIC)
        else:
            assert isinstance(c.message.content, str) and c.message.content
    # The result reaches the prompt: a longer result is a longer prompt.
    short = ask(srv, messages, BASIC, max_tokens=1).usage.prompt_tokens
    longer = messages[:2] + [dict(messages[2], content=messages[2]["content"] + " " * 40 + "humid")]
    as_dicts = [messages[0], first.choices[0].message.model_dump(exclude_none=True), messages[2]]
    assert ask(srv, as_dicts, BASIC, max_tokens=1).usage.prompt_tokens == short
    assert ask(srv, longer, BASIC, max_tokens=1).usage.prompt_tokens > short
    # Tools offered with tool_choice none are not described to the model.
    plain = ask(srv, "Hi", [], max_tokens=1).usage.prompt_tokens
    assert ask(srv, "Hi", BASIC, tool_choice="none", max_tokens=1).usage.prompt_tokens == plain
    assert ask(srv, "Hi", BASIC, max_tokens=1).usage.prompt_tokens > plain + 100


def msgs(*extra):
    return [{"role": "user", "content": "Hi"}] + list(extra)


BAD = [
    ({"tools": {"type": "function"}}, "tools", "must be a list"),
    ({"tools": [3]}, "tools[0]", "must be an object"),
    ({"tools": [{"type": "retrieval", "function": {"name": "f"}}]}, "tools[0].type", "must be 'function'"),
    ({"tools": [{"type": "function"}]}, "tools[0].function", "must be an object"),
    ({"tools": [{"type": "function", "function": {}}]}, "tools[0].function.name", "is required"),
    ({"tools": [{"type": "function", "function": {"name": 7}}]}, "tools[0].function.name", "must be a string"),
    ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools[0].function.name",
     "letters, digits"),
    ({"tools": [{"type": "function", "function": {"name": "f", "description": ["x"]}}]},
     "tools[0].function.description", "must be a string"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]},
     "tools[0].function.parameters", "must be a JSON Schema object"),
    ({"tools": [{"type": "function", "function": {"name": "f", "strict": "yes"}}]}, "tools[0].function.strict",
     "must be a boolean"),
    ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name", "two tools are named 'get_weather'"),
    ({"tools": [WEATHER] * 129}, "tools", "at most 128 tools"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 200} for i in range(400)}}}}]},
     "tools[0].function.parameters", "at most 65536 bytes"),
    ({"tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "contentMediaType": "text/html"}}}}}]},
     "tools", "tools[0] ('f'): schema at '#/properties/a': the keyword 'contentMediaType' is not supported"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "strng"}}}]}, "tools",
     "unknown type 'strng'"),
    ({"tools": [WEATHER], "tool_choice": "always"}, "tool_choice", "must be 'none', 'auto', 'required'"),
    ({"tools": [WEATHER], "tool_choice": 1}, "tool_choice", "must be 'none', 'auto', 'required'"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_time"}}}, "tool_choice",
     "'get_time', which is not in 'tools'"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function"}}, "tool_choice.function", "must be an object"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": None}}},
     "tool_choice.function.name", "is required"),
    ({"tool_choice": "required"}, "tool_choice", "needs 'tools'"),
    ({"tools": [WEATHER], "parallel_tool_calls": "no"}, "parallel_tool_calls", "must be a boolean"),
    ({"tools": [WEATHER], "response_format": {"type": "json_object"}}, "tools", "cannot be combined"),
    ({"messages": msgs({"role": "assistant", "tool_calls": {"id": "x"}})}, "messages[1].tool_calls",
     "must be a list"),
    ({"messages": msgs({"role": "assistant", "tool_calls": ["x"]})}, "messages[1].tool_calls[0]", "must be an object"),
    ({"messages": msgs({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {}}]})},
     "messages[1].tool_calls[0].function.name", "is required"),
    ({"messages": msgs({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": 5}}]})},
     "messages[1].tool_calls[0].function.arguments", "must be a string"),
    ({"messages": msgs({"role": "assistant", "tool_calls": [{"id": "c", "function": {
        "name": "f", "arguments": "[" * 100000 + "]" * 100000}}]})},
     "messages[1].tool_calls[0].function.arguments", "nests deeper than 64 levels"),
    ({"messages": msgs({"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": "f"}}]})},
     "messages[1].tool_calls[0].id", "must be a string"),
    ({"messages": msgs({"role": "user", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "f"}}]})},
     "messages[1].tool_calls", "only assistant messages"),
    ({"messages": msgs({"role": "tool", "content": "18 C"})}, "messages[1].tool_call_id", "is required"),
    ({"messages": msgs({"role": "tool", "tool_call_id": ["c"], "content": "x"})}, "messages[1].tool_call_id",
     "must be a string"),
]


@pytest.mark.parametrize("extra,param,message", BAD)
def test_bad_tool_fields_are_400s(srv, extra, param, message):
    body = {"model": srv.model_name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    body.update(extra)
    status, _, raw = srv.post("/v1/chat/completions", body)
    assert status == 400, raw
    err = json.loads(raw)["error"]
    assert err["param"] == param, err
    assert message in err["message"], err


def test_tools_on_completions_endpoint_is_a_400(srv):
    status, _, raw = srv.post("/v1/completions", {"model": srv.model_name, "prompt": "Hi", "tools": [WEATHER]})
    assert status == 400 and json.loads(raw)["error"]["param"] == "tools"


def test_client_error_is_raised_for_unknown_tool(srv):
    with pytest.raises(openai.BadRequestError) as e:
        ask(srv, "Hi", [WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}})
    assert "nope" in str(e.value)
