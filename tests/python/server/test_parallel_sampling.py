"""Parallel sampling (`n`, `best_of`) and batched completion prompts, through
the official openai client and raw HTTP, checked against OpenAI's documented
semantics: n choices indexed 0..n-1 (streamed chunks carry their index, each
choice finishes on its own), usage counting each prompt once and every
branch's tokens, a batch's choice i*n+j being prompt i's j-th, best_of
keeping the n branches with the highest summed log-probability (checked
against the log-probs the server reports per branch). Branch j draws with
seed + j, so a seeded n-request equals n single requests with seeds seed,
seed+1, ... The branches share the prompt's KV pages: the pool's watermark
and the fork counters show it."""
import collections
import http.client
import json
import time

import openai
import pytest

from stride_server import SMOL, SMOL_NAME, StrideServer

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "The capital of France is"
OTHER = "One, two, three, four,"
CHAT = [{"role": "user", "content": "Name a fruit."}]


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M"],
                     env={"STRIDE_MAX_BATCH": "8", "STRIDE_MAX_TOKENS_CAP": "512"})
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def error_of(status, body):
    e = json.loads(body)["error"]
    assert set(e) == {"message", "type", "param", "code"}, e
    return status, e["param"]


def test_n_at_temperature_zero_gives_n_copies_of_the_single_answer(client):
    one = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=12, temperature=0)
    three = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=12, temperature=0, n=3)
    assert [c.index for c in three.choices] == [0, 1, 2]
    assert [c.text for c in three.choices] == [one.choices[0].text] * 3
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens
    assert three.usage.total_tokens == three.usage.prompt_tokens + three.usage.completion_tokens

    one = client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10, temperature=0)
    three = client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10, temperature=0, n=3)
    assert [c.index for c in three.choices] == [0, 1, 2]
    assert [c.message.content for c in three.choices] == [one.choices[0].message.content] * 3
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens


def test_seeded_branches_equal_single_requests_with_successive_seeds(client):
    kw = dict(model=MODEL, prompt=PROMPT, max_tokens=16, temperature=1.0, seed=1234)
    many = client.completions.create(n=4, **kw)
    singles = [client.completions.create(**{**kw, "seed": 1234 + j}).choices[0].text for j in range(4)]
    assert [c.text for c in many.choices] == singles
    assert len(set(singles)) > 1  # the seeds differ, so (at temperature 1) do the branches

    ckw = dict(model=MODEL, messages=CHAT, max_tokens=12, temperature=1.0, seed=99)
    many = client.chat.completions.create(n=3, **ckw)
    singles = [client.chat.completions.create(**{**ckw, "seed": 99 + j}).choices[0].message.content
               for j in range(3)]
    assert [c.message.content for c in many.choices] == singles


def test_streamed_choices_carry_their_index_and_finish_each(client):
    kw = dict(model=MODEL, prompt=PROMPT, max_tokens=12, temperature=1.0, seed=5, n=3)
    full = client.completions.create(**kw)
    chunks = list(client.completions.create(stream=True, stream_options={"include_usage": True}, **kw))
    text = collections.defaultdict(str)
    finishes = collections.Counter()
    for c in chunks[:-1]:
        assert len(c.choices) == 1
        text[c.choices[0].index] += c.choices[0].text
        if c.choices[0].finish_reason is not None:
            finishes[c.choices[0].index] += 1
    assert finishes == {0: 1, 1: 1, 2: 1}
    assert [text[i] for i in range(3)] == [c.text for c in full.choices]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert chunks[-1].usage.prompt_tokens == full.usage.prompt_tokens

    ckw = dict(model=MODEL, messages=CHAT, max_tokens=10, temperature=1.0, seed=8, n=2)
    full = client.chat.completions.create(**ckw)
    content = collections.defaultdict(str)
    roles, finishes = collections.Counter(), collections.Counter()
    for c in client.chat.completions.create(stream=True, **ckw):
        ch = c.choices[0]
        roles[ch.index] += ch.delta.role == "assistant"
        content[ch.index] += ch.delta.content or ""
        finishes[ch.index] += ch.finish_reason is not None
    assert roles == {0: 1, 1: 1} and finishes == {0: 1, 1: 1}
    assert [content[0], content[1]] == [c.message.content for c in full.choices]


def test_batched_prompts_equal_separate_requests(srv, client):
    kw = dict(model=MODEL, max_tokens=10, temperature=0)
    a = client.completions.create(prompt=PROMPT, **kw)
    b = client.completions.create(prompt=OTHER, **kw)
    both = client.completions.create(prompt=[PROMPT, OTHER], **kw)
    assert [(c.index, c.text) for c in both.choices] == [(0, a.choices[0].text), (1, b.choices[0].text)]
    assert both.usage.prompt_tokens == a.usage.prompt_tokens + b.usage.prompt_tokens
    assert both.usage.completion_tokens == a.usage.completion_tokens + b.usage.completion_tokens

    ids = [json.loads(srv.post("/tokenize", {"prompt": p})[2])["tokens"] for p in (PROMPT, OTHER)]
    as_tokens = client.completions.create(prompt=ids, **kw)
    singles = [client.completions.create(prompt=t, **kw).choices[0].text for t in ids]
    assert [c.text for c in as_tokens.choices] == singles

    # With n, choice i * n + j is prompt i's branch j, drawn with seed + j.
    skw = dict(model=MODEL, max_tokens=8, temperature=1.0, seed=21)
    grid = client.completions.create(prompt=[PROMPT, OTHER], n=2, **skw)
    want = [client.completions.create(prompt=p, **{**skw, "seed": 21 + j}).choices[0].text
            for p in (PROMPT, OTHER) for j in range(2)]
    assert [c.index for c in grid.choices] == [0, 1, 2, 3]
    assert [c.text for c in grid.choices] == want


def test_best_of_keeps_the_branches_with_the_highest_logprob_sums(client):
    kw = dict(model=MODEL, prompt=PROMPT, max_tokens=8, temperature=1.0, seed=77, logprobs=0)
    every = client.completions.create(n=4, best_of=4, **kw)
    sums = [sum(c.logprobs.token_logprobs) for c in every.choices]
    assert len(set(sums)) == 4
    best = client.completions.create(n=2, best_of=4, **kw)
    ranked = sorted(range(4), key=lambda i: -sums[i])[:2]
    assert [c.text for c in best.choices] == [every.choices[i].text for i in ranked]
    assert [c.index for c in best.choices] == [0, 1]
    # Billing counts every branch generated, as OpenAI's best_of does.
    assert best.usage.completion_tokens == every.usage.completion_tokens
    one = client.completions.create(best_of=4, **kw)  # n defaults to 1
    assert [c.text for c in one.choices] == [every.choices[ranked[0]].text]


@pytest.mark.parametrize("path,body,param", [
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "n": 3, "best_of": 2}, "best_of"),
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "best_of": 3, "stream": True}, "best_of"),
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "n": 9}, "n"),  # more than the server's batch of 8
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "n": 2, "best_of": 9}, "best_of"),
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "n": 0}, "n"),
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "n": 129}, "n"),
    ("/v1/completions", {"model": SMOL_NAME, "prompt": [PROMPT, [1, 2]]}, "prompt"),
    ("/v1/completions", {"model": SMOL_NAME, "prompt": PROMPT, "n": 2, "speculative": "prompt-lookup"}, "speculative"),
    ("/v1/chat/completions", {"model": SMOL_NAME, "messages": CHAT, "best_of": 2}, "best_of"),
    ("/v1/chat/completions", {"model": SMOL_NAME, "messages": CHAT, "n": 9}, "n"),
])
def test_refusals_name_the_field(srv, path, body, param):
    status, got = error_of(*srv.post(path, body)[::2])
    assert (status, got) == (400, param)


def test_raw_http_choices_and_usage(srv):
    body = {"model": srv.model_name, "messages": CHAT, "max_tokens": 4, "temperature": 0}
    status, _, raw = srv.post("/v1/chat/completions", body)
    one = json.loads(raw)
    assert status == 200, one
    status, _, raw = srv.post("/v1/chat/completions", {"model": srv.model_name, **body, "n": 2})
    two = json.loads(raw)
    assert status == 200, two
    assert [c["index"] for c in two["choices"]] == [0, 1]
    for c in two["choices"]:
        assert c["message"] == one["choices"][0]["message"] and c["finish_reason"] == one["choices"][0]["finish_reason"]
    assert two["usage"]["prompt_tokens"] == one["usage"]["prompt_tokens"]
    assert two["usage"]["completion_tokens"] == 2 * one["usage"]["completion_tokens"]
    assert two["usage"]["total_tokens"] == two["usage"]["prompt_tokens"] + two["usage"]["completion_tokens"]


def long_prompt(word):
    return " ".join(f"{word} {i}." for i in range(200))


def test_branches_share_the_prompts_kv_pages():
    # A fresh server: the pool's watermark is this test's alone.
    with StrideServer(SMOL, extra_args=["--kv-budget", "64M"], env={"STRIDE_MAX_BATCH": "8"}) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        kw = dict(model=MODEL, max_tokens=8, temperature=1.0, seed=3, extra_body={"ignore_eos": True})
        ids = json.loads(s.post("/tokenize", {"prompt": long_prompt("apple")})[2])["tokens"]
        one = c.completions.create(prompt=ids, **kw)
        m1 = s.metrics()
        single_peak = m1["stride_kv_cache_pages_peak"]
        # The same length, its first page different, so the prefix cache has nothing of it.
        other = [ids[0], (ids[1] + 1) % 1000] + ids[2:]
        four = c.completions.create(prompt=other, n=4, **kw)
        assert four.usage.prompt_tokens == one.usage.prompt_tokens > 400
        assert four.usage.prompt_tokens_details.cached_tokens == 0
        m4 = s.metrics()
        # Unshared, four branches would hold about 4x the single request's pages.
        assert m4["stride_kv_cache_pages_peak"] < 1.5 * single_peak, (single_peak, m4["stride_kv_cache_pages_peak"])
        assert m4["stride_kv_forks_total"] - m1["stride_kv_forks_total"] == 3
        shared = m4["stride_kv_fork_pages_shared_total"] - m1["stride_kv_fork_pages_shared_total"]
        copied = m4["stride_kv_fork_pages_copied_total"] - m1["stride_kv_fork_pages_copied_total"]
        assert shared > 10 * copied  # many full pages shared for each open page copied
        assert shared > 0
        # The prompt went through the model once.
        assert m4["stride_prompt_tokens_total"] - m1["stride_prompt_tokens_total"] == four.usage.prompt_tokens
        assert m4["stride_kv_cache_pages_used"] == m1["stride_kv_cache_pages_used"] == 0


def test_disconnect_cancels_every_branch(srv):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps(
        {"model": SMOL_NAME, "prompt": PROMPT, "n": 4, "max_tokens": 400, "ignore_eos": True, "stream": True, "temperature": 1.0}),
        headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200
    seen = set()
    while len(seen) < 4:
        line = r.fp.readline().decode()
        if line.startswith("data: {"):
            seen.add(json.loads(line[6:])["choices"][0]["index"])
    conn.sock.close()
    conn.close()
    deadline = time.time() + 10
    while time.time() < deadline:
        m = srv.metrics()
        if m["stride_num_requests_running"] == 0 and m["stride_kv_cache_pages_used"] == 0:
            break
        time.sleep(0.1)
    assert m["stride_num_requests_running"] == 0 and m["stride_kv_cache_pages_used"] == 0, m


def test_each_branch_follows_its_own_grammar_state(client):
    kw = dict(model=MODEL, messages=[{"role": "user", "content": "Describe a cat as JSON."}], max_tokens=40,
              temperature=1.0, seed=41, response_format={"type": "json_object"})
    many = client.chat.completions.create(n=3, **kw)
    singles = [client.chat.completions.create(**{**kw, "seed": 41 + j}).choices[0].message.content
               for j in range(3)]
    assert [c.message.content for c in many.choices] == singles
    for c in many.choices:
        if c.finish_reason == "stop":
            json.loads(c.message.content)


def test_branches_that_find_no_pages_to_fork_wait_and_still_finish():
    # A pool that holds the prompt and little more: some branches cannot fork
    # when the prompt is done and run later through the prefix cache.
    with StrideServer(SMOL, extra_args=["--kv-budget", "16M"], env={"STRIDE_MAX_BATCH": "4"}) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        ids = json.loads(s.post("/tokenize", {"prompt": " ".join(f"fig {i}." for i in range(120))})[2])["tokens"]
        kw = dict(model=MODEL, prompt=ids, max_tokens=8, temperature=1.0, seed=9, extra_body={"ignore_eos": True})
        many = c.completions.create(n=4, **kw)
        m = s.metrics()
        singles = [c.completions.create(**{**kw, "seed": 9 + j}).choices[0].text for j in range(4)]
        assert [ch.text for ch in many.choices] == singles
        assert m["stride_kv_forks_total"] < 3, m["stride_kv_forks_total"]
        assert many.usage.completion_tokens == 32


def test_branches_fork_under_a_top_k_hot_set():
    """With top-k's hot set (resident=N and an offload tier) the prompt's pages in the tier are copied into
    each branch's own slots at the fork: the branches fork rather than prefill again, and still equal single
    requests with successive seeds."""
    with StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--attention", "topk:sparsity=0.8,resident=4"],
                      env={"STRIDE_KV_OFFLOAD_BYTES": "256M", "STRIDE_MAX_BATCH": "4"}) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        ids = json.loads(s.post("/tokenize", {"prompt": long_prompt("pear")})[2])["tokens"]
        kw = dict(model=MODEL, prompt=ids, max_tokens=8, temperature=1.0, seed=5, extra_body={"ignore_eos": True})
        before = s.metrics()
        many = c.completions.create(n=3, **kw)
        m = s.metrics()
        assert m["stride_kv_topk_pages_offloaded_total"] > 0, "the hot set moved nothing to the tier"
        assert m["stride_kv_forks_total"] - before["stride_kv_forks_total"] == 2
        assert m["stride_prompt_tokens_total"] - before["stride_prompt_tokens_total"] == many.usage.prompt_tokens
        singles = [c.completions.create(**{**kw, "seed": 5 + j}).choices[0].text for j in range(3)]
        assert [ch.text for ch in many.choices] == singles
        end = s.metrics()
        assert end["stride_kv_cache_pages_used"] == 0 and end["stride_kv_topk_offload_refused_total"] == 0

