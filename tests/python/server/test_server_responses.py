"""What users of vLLM and llama-server rely on beyond chat: `/v1/responses`
through the official openai client (plain and streamed, instructions, JSON
schema), `--served-model-name` aliases, and `usage.prompt_tokens_details.cached_tokens`.

Oracles: the official client's own parsing of the Responses objects and
events, Jinja2 + llama.cpp's tokenizer for the prompt the translated request
must produce, and `jsonschema` for structured output."""
import json

import jinja2
import jsonschema
import openai
import pytest

import official_spec as spec
from stride_server import GEMMA, SMOL, StrideServer

NAMES = ["smol", "smollm2-135m", "team/default"]
PAGE = 32  # the server's default page_size: prefix reuse is by whole pages


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--served-model-name", NAMES[0], NAMES[1],
                                       "--served-model-name", NAMES[2]],
                     env={"STRIDE_MAX_TOKENS_CAP": "256"})
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def smol_vocab():
    import llama_cpp  # llama.cpp's own tokenizer and the GGUF's template
    return llama_cpp.Llama(model_path=SMOL, vocab_only=True, verbose=False)


def template_tokens(llm, messages):
    """Prompt tokens of `messages` rendered by Jinja2 with the GGUF's template."""
    tmpl = llm.metadata["tokenizer.chat_template"]
    env = jinja2.Environment(loader=jinja2.BaseLoader(), trim_blocks=False, lstrip_blocks=False)
    env.globals["raise_exception"] = lambda m: (_ for _ in ()).throw(ValueError(m))
    text = env.from_string(tmpl).render(messages=messages, add_generation_prompt=True,
                                        bos_token="<|im_start|>", eos_token="<|im_end|>")
    return llm.tokenize(text.encode(), add_bos=False, special=True)


def greedy_chat(client, messages, max_tokens, model=NAMES[0]):
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=max_tokens, temperature=0)
    return r.choices[0].message.content, r


# ---- served model names ----

def test_models_lists_every_served_name(client):
    ids = [m.id for m in client.models.list().data]
    assert ids == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_alias_serves_and_the_first_is_reported(client, name):
    r = client.chat.completions.create(model=name, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert r.model == NAMES[0]
    assert r.usage.completion_tokens >= 1


def test_unknown_model_lists_the_served_names(client):
    with pytest.raises(openai.NotFoundError) as ei:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    msg = ei.value.body["message"]
    assert "gpt-4o" in msg and all(f"'{n}'" in msg for n in NAMES), msg
    assert ei.value.body["param"] == "model" and ei.value.body["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="nope", input="Hi", max_output_tokens=16)


def test_default_name_is_the_file_name():
    with StrideServer(GEMMA, extra_args=["--kv-budget", "32M"]) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        assert [m.id for m in c.models.list().data] == ["gemma-3-270m-q4_k_m.gguf"]


# ---- /v1/responses ----

def test_response_equals_chat_greedy(client):
    want, chat = greedy_chat(client, [{"role": "user", "content": "Name three colours."}], 24)
    r = client.responses.create(model=NAMES[1], input="Name three colours.", max_output_tokens=24, temperature=0)
    assert r.object == "response" and r.id.startswith("resp_")
    assert r.model == NAMES[0]
    assert r.output_text == want
    assert r.output[0].type == "message" and r.output[0].role == "assistant"
    assert r.usage.input_tokens == chat.usage.prompt_tokens
    assert r.usage.output_tokens == chat.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    if r.usage.output_tokens == 24:
        assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    else:
        assert r.status == "completed"


def test_instructions_and_item_list_render_through_the_template(client, smol_vocab):
    """`instructions` is the system message and items keep their roles: the
    prompt is exactly what Jinja2 renders from the GGUF's own template."""
    items = [{"role": "developer", "content": "Answer in one word."},
             {"role": "user", "content": [{"type": "input_text", "text": "Capital of "},
                                          {"type": "input_text", "text": "Italy?"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Rome."}]},
             {"role": "user", "content": "And of Spain?"}]
    r = client.responses.create(model=NAMES[0], instructions="You are terse.", input=items,
                                max_output_tokens=16, temperature=0)
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "Capital of Italy?"},
                {"role": "assistant", "content": "Rome."},
                {"role": "user", "content": "And of Spain?"}]
    assert r.usage.input_tokens == len(template_tokens(smol_vocab, messages))
    assert r.instructions == "You are terse."
    want, _ = greedy_chat(client, messages, 16)
    assert r.output_text == want


def test_streamed_events_accumulate_to_the_full_response(client):
    kw = dict(model=NAMES[0], input="Write a sentence about the sea.", max_output_tokens=40, temperature=0)
    full = client.responses.create(**kw)
    events = list(client.responses.create(stream=True, **kw))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert types[-4:-1] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
    assert types[-1] == ("response.completed" if full.status == "completed" else "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == full.output_text
    assert events[-1].response.output_text == full.output_text
    assert events[-1].response.usage.output_tokens == full.usage.output_tokens


LOGPROBS = "message.output_text.logprobs"


def test_logprobs_equal_chat_greedy(client):
    """include ["message.output_text.logprobs"] puts each output token's log-prob, with top_logprobs alternatives,
    on the output_text part, as chat completions reports them for the same prompt (OpenAI's LogProb shape)."""
    kw = dict(model=NAMES[0], max_output_tokens=20, temperature=0)
    raw = client.responses.with_raw_response.create(input="Name a colour.", include=[LOGPROBS], top_logprobs=3, **kw)
    spec.assert_valid("Response", raw.http_response.json())
    part = raw.parse().output[0].content[0]
    chat = client.chat.completions.create(model=NAMES[0], messages=[{"role": "user", "content": "Name a colour."}],
                                          max_tokens=20, temperature=0, logprobs=True, top_logprobs=3)
    want = chat.choices[0].logprobs.content
    assert len(part.logprobs) == len(want) == chat.usage.completion_tokens
    for got, ref in zip(part.logprobs, want):
        assert (got.token, got.bytes) == (ref.token, ref.bytes)
        assert got.logprob == pytest.approx(ref.logprob, abs=1e-5)
        assert [t.token for t in got.top_logprobs] == [t.token for t in ref.top_logprobs] and len(got.top_logprobs) == 3
        # Greedy: the sampled token is the likeliest alternative.
        assert got.top_logprobs[0].token == got.token
    assert "".join(t.token for t in part.logprobs) == part.text
    # Without the include, top_logprobs asks for nothing.
    plain = client.responses.create(input="Name a colour.", top_logprobs=3, **kw)
    assert plain.output[0].content[0].logprobs == [] and plain.output_text == part.text


def test_streamed_logprobs_add_up_to_the_full_ones(client):
    kw = dict(model=NAMES[0], input="Write a word.", max_output_tokens=16, temperature=0, include=[LOGPROBS],
              top_logprobs=1)
    full = client.responses.create(**kw).output[0].content[0].logprobs
    events = list(client.responses.create(stream=True, **kw))
    for e in events:
        spec.assert_stream_event_valid(e.model_dump(mode="json", exclude_unset=True))
    deltas = [lp for e in events if e.type == "response.output_text.delta" for lp in e.logprobs]
    done = next(e for e in events if e.type == "response.output_text.done")
    assert full and [lp.token for lp in deltas] == [lp.token for lp in full] == [lp.token for lp in done.logprobs]
    assert [lp.logprob for lp in deltas] == pytest.approx([lp.logprob for lp in full], abs=1e-5)
    final = events[-1].response.output[0].content[0].logprobs
    assert [lp.model_dump() for lp in final] == [lp.model_dump() for lp in done.logprobs]


def test_json_schema_format_validates(client):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "population": {"type": "integer", "minimum": 0}},
              "required": ["city", "population"], "additionalProperties": False}
    r = client.responses.create(model=NAMES[0], input="Give a city and its population as JSON.",
                                max_output_tokens=60, temperature=0,
                                text={"format": {"type": "json_schema", "name": "city", "schema": schema,
                                                 "strict": True}})
    assert r.status == "completed", r
    jsonschema.validate(json.loads(r.output_text), schema)
    assert r.text.format.type == "json_schema"
    # Property order is the client's, as on chat completions.
    assert list(json.loads(r.output_text)) == ["city", "population"]


@pytest.mark.parametrize("body,param", [
    ({}, "input"),
    ({"input": 5}, "input"),
    ({"input": []}, "input"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input"),
    ({"input": [{"type": "function_call_output", "call_id": "a", "output": "x"}]}, "input"),
    ({"input": [{"role": "wizard", "content": "x"}]}, "input"),
    ({"input": "hi", "instructions": ["x"]}, "instructions"),
    ({"input": "hi", "max_output_tokens": "8"}, "max_output_tokens"),
    ({"input": "hi", "max_output_tokens": 10 ** 9}, "max_output_tokens"),
    ({"input": "hi", "max_output_tokens": 15}, "max_output_tokens"),  # OpenAI's minimum: 16
    ({"input": "hi", "temperature": "hot"}, "temperature"),
    ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
    ({"input": "hi", "tools": [{"type": "web_search"}]}, "tools"),
    ({"input": "hi", "background": True}, "background"),
    ({"input": "hi", "metadata": {"k": 1}}, "metadata.k"),
    ({"input": "hi", "metadata": {str(i): "v" for i in range(17)}}, "metadata"),
    ({"input": "hi", "text": {"format": {"type": "xml"}}}, "text.format"),
    ({"input": "hi", "text": {"format": {"type": "json_schema", "schema": {"type": "nope"}}}}, "text.format"),
    ({"input": "hi", "stream": "yes"}, "stream"),
    ({"input": "hi", "include": ["reasoning.encrypted_content"]}, "include"),
    ({"input": "hi", "include": "message.output_text.logprobs"}, "include"),
    ({"input": "hi", "include": [LOGPROBS], "top_logprobs": 21}, "top_logprobs"),
])
def test_bad_requests_name_the_field(srv, body, param):
    status, _, raw = srv.post("/v1/responses", {"model": srv.model_name, **body})
    assert status == 400, raw
    err = json.loads(raw)["error"]
    assert err["param"] == param, err
    assert err["type"] == "invalid_request_error" and err["message"]


def test_hostile_bodies_do_not_hurt_the_server(srv, client):
    for raw in [b"[1,2]", b"{", b'{"input": ' + b"[" * 100 + b"]" * 100 + b"}", b'{"input": "\xff\xfe"}']:
        status, _, _ = srv.post("/v1/responses", raw)
        assert status == 400
    assert client.responses.create(model=NAMES[0], input="Hi", max_output_tokens=16).usage.output_tokens >= 1


# ---- cached prompt tokens ----

def test_cached_tokens_report_the_prefix_hit(client, smol_vocab):
    system = "You are a helpful assistant. " + " ".join(f"Rule {i}: be precise about item {i}." for i in range(40))
    first = [{"role": "system", "content": system}, {"role": "user", "content": "What is rule 7?"}]
    other = [{"role": "system", "content": system}, {"role": "user", "content": "Summarise rule 12 for me."}]
    a = client.chat.completions.create(model=NAMES[0], messages=first, max_tokens=4, temperature=0)
    assert a.usage.prompt_tokens_details.cached_tokens == 0
    # The same prompt again: everything but the part of the last page that the
    # next token is computed from comes from the cache.
    b = client.chat.completions.create(model=NAMES[0], messages=first, max_tokens=4, temperature=0)
    n = b.usage.prompt_tokens
    assert n - PAGE <= b.usage.prompt_tokens_details.cached_tokens < n
    # Another question on the same system prompt: the shared prefix, in whole pages.
    ta, tb = template_tokens(smol_vocab, first), template_tokens(smol_vocab, other)
    shared = next(i for i, (x, y) in enumerate(zip(ta, tb)) if x != y)
    c = client.responses.create(model=NAMES[0], input=other[1:], instructions=system, max_output_tokens=16)
    assert c.usage.input_tokens == len(tb)
    assert (shared // PAGE) * PAGE - PAGE <= c.usage.input_tokens_details.cached_tokens <= shared
    assert c.usage.input_tokens_details.cached_tokens > 0
    # Streaming usage carries it too.
    chunks = list(client.chat.completions.create(model=NAMES[0], messages=first, max_tokens=4, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == b.usage.prompt_tokens_details.cached_tokens
