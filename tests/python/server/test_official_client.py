"""`stride serve` through the official `openai` Python client, each raw body and
each streamed chunk or event also checked against OpenAI's published OpenAPI
description (tests/python/official_spec.py): what the client parses and what
the spec requires must both hold.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/server/test_official_client.py
"""
import openai
import pytest

import official_spec as spec
from stride_server import SMOL, StrideServer

NAMES = ["smol", "team/default"]
MODEL = NAMES[0]
PAGE = 16  # the server's page_size below: the prefix cache works in whole pages
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--served-model-name", *NAMES],
                     env={"STRIDE_PAGE_SIZE": str(PAGE)})
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def received(obj):
    """What the client parsed, as the JSON it came from (members the server did not send stay out)."""
    return obj.model_dump(mode="json", exclude_unset=True, by_alias=True)


def test_models_retrieve_every_served_name(client):
    listed = client.models.list()
    assert [m.id for m in listed.data] == NAMES
    for name in NAMES:
        raw = client.models.with_raw_response.retrieve(name)
        spec.assert_valid("Model", raw.http_response.json())
        m = raw.parse()
        assert m.id == name and m.object == "model" and isinstance(m.created, int) and m.owned_by


def test_models_retrieve_unknown_is_not_found(client):
    with pytest.raises(openai.NotFoundError) as ei:
        client.models.retrieve("gpt-unknown")
    spec.assert_valid("ErrorResponse", ei.value.response.json())
    assert ei.value.code == "model_not_found"


def test_chat_completion(client):
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=HI, max_tokens=4, logprobs=True,
                                                           top_logprobs=2)
    spec.assert_valid("CreateChatCompletionResponse", raw.http_response.json())
    choice = raw.parse().choices[0]
    assert choice.message.refusal is None and choice.logprobs.refusal is None
    assert len(choice.logprobs.content) == raw.parse().usage.completion_tokens


def test_chat_stream(client):
    chunks = list(client.chat.completions.create(model=MODEL, messages=HI, max_tokens=4, stream=True,
                                                 logprobs=True, stream_options={"include_usage": True}))
    for c in chunks:
        spec.assert_valid("CreateChatCompletionStreamResponse", received(c), f"the chunk {c}")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].usage.completion_tokens == 4


def test_completion_and_stream(client):
    raw = client.completions.with_raw_response.create(model=MODEL, prompt="Once upon a", max_tokens=4, logprobs=1)
    spec.assert_valid("CreateCompletionResponse", raw.http_response.json())
    assert raw.parse().choices[0].logprobs.tokens
    for c in client.completions.create(model=MODEL, prompt="Once upon a", max_tokens=4, stream=True):
        spec.assert_completion_chunk_valid(received(c))


def test_response_and_stream(client):
    raw = client.responses.with_raw_response.create(model=MODEL, input="Hi", max_output_tokens=16, user="user-1")
    spec.assert_valid("Response", raw.http_response.json())
    r = raw.parse()
    assert r.user == "user-1" and r.output[0].content[0].logprobs == [] and r.output_text
    types = []
    for ev in client.responses.create(model=MODEL, input="Hi", max_output_tokens=16, stream=True):
        spec.assert_stream_event_valid(received(ev))
        types.append(ev.type)
    assert types[0] == "response.created" and types[-1] in ("response.completed", "response.incomplete")
    assert "response.output_text.delta" in types


def assert_cache_reads_and_writes(n, first, again):
    """The cache details of a prompt of n tokens sent twice: whole pages are written, then read, but for the
    page of the last token, which is always computed."""
    assert n > 3 * PAGE
    assert first.cached_tokens == 0 and first.cache_write_tokens == n // PAGE * PAGE
    assert again.cached_tokens == (n - 1) // PAGE * PAGE
    assert again.cache_write_tokens == n // PAGE * PAGE - (n - 1) // PAGE * PAGE


def test_response_reports_cache_reads_and_writes(client):
    """The first request computes the prompt and writes its whole pages to the prefix cache; the same
    prompt again reads them (all but the page of its last token, which is always computed)."""
    # Instructions of their own: the template's system turn shares no page with the other tests' prompts.
    ask = dict(model=MODEL, instructions="Count words.", max_output_tokens=16,
               input="Count the words of this sentence, which is long enough to fill a few pages of the cache. " * 3)
    first = client.responses.create(**ask).usage
    again = client.responses.create(**ask).usage
    assert again.input_tokens == first.input_tokens
    assert_cache_reads_and_writes(first.input_tokens, first.input_tokens_details, again.input_tokens_details)


@pytest.mark.parametrize("route", ["chat", "completions"])
def test_completion_usage_reports_cache_writes(client, route):
    """chat/completions usage carries prompt_tokens_details.cache_write_tokens where the official client reads
    it: the first request writes the whole pages of its prompt, the same prompt again only what the cache did
    not already hold (the page of its last token, which is always computed, when that page is whole)."""
    text = f"Spell the words of this {route} sentence, which is long enough to fill a few pages of the cache. " * 3
    if route == "chat":
        # A system turn of its own: the template's default one would share a page with the other tests' prompts.
        ask = dict(model=MODEL, max_tokens=2, messages=[{"role": "system", "content": f"Spell ({route})."},
                                                        {"role": "user", "content": text}])
        create = client.chat.completions.with_raw_response.create
        schema = "CreateChatCompletionResponse"
    else:
        ask = dict(model=MODEL, max_tokens=2, prompt=text)
        create = client.completions.with_raw_response.create
        schema = "CreateCompletionResponse"
    raw = [create(**ask) for _ in range(2)]
    for r in raw:
        spec.assert_valid(schema, r.http_response.json())
    first, again = (r.parse().usage for r in raw)
    assert again.prompt_tokens == first.prompt_tokens
    assert_cache_reads_and_writes(first.prompt_tokens, first.prompt_tokens_details, again.prompt_tokens_details)
    # The streamed usage chunk says the same.
    chunks = list(client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True})
                  if route == "chat" else
                  client.completions.create(**ask, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage.prompt_tokens_details.cache_write_tokens == again.prompt_tokens_details.cache_write_tokens


def test_embeddings_default_base64_and_float(client):
    """The client asks for base64 unless told otherwise and decodes it itself."""
    b64 = client.embeddings.create(model=MODEL, input=["Hello", "world"])
    flt = client.embeddings.with_raw_response.create(model=MODEL, input=["Hello", "world"], encoding_format="float")
    spec.assert_valid("CreateEmbeddingResponse", flt.http_response.json())
    spec.assert_valid("CreateEmbeddingResponse", received(b64))
    for a, b in zip(b64.data, flt.parse().data):
        assert a.embedding == pytest.approx(b.embedding, abs=1e-6)
