"""Continuous batching under KV pressure: with a pool too small for every
request at once, admission waits for pages and a sequence that runs out is
preempted (freed and recomputed), never crashed; greedy output and its
log-probs are unchanged, bit for bit."""
import concurrent.futures as cf

import openai

from stride_server import SMOL, StrideServer

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def complete(url, prompt, n, logprobs=None):
    c = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=300)
    r = c.completions.create(model=MODEL, prompt=prompt, max_tokens=n, temperature=0, logprobs=logprobs,
                             extra_body={"ignore_eos": True})
    if logprobs:
        return r.choices[0].logprobs
    return r.choices[0].text, r.choices[0].finish_reason


def assert_same(alone, other):
    """A preempted sequence is recomputed by a prefill, and prefill sums in the
    same order as decode: tokens and log-probs equal the solo run's exactly."""
    assert alone.tokens == other.tokens
    assert alone.token_logprobs == other.token_logprobs


def test_preemption_keeps_greedy_output():
    # 30 layers x 32-token pages of 24 KiB: 3 MiB holds 128 pages, ~4 pages per layer for one sequence.
    with StrideServer(SMOL, extra_args=["--kv-budget", "3M", "--max-batch", "6"]) as s:
        prompts = [f"List facts about animal number {i}:" for i in range(6)]
        alone = [complete(s.url, p, 48, logprobs=2) for p in prompts]
        with cf.ThreadPoolExecutor(6) as ex:
            together = list(ex.map(lambda p: complete(s.url, p, 48, logprobs=2), prompts))
        for a, t in zip(alone, together):
            assert_same(a, t)
        assert all(len(t.tokens) == 48 for t in together)
        m = s.metrics()
        assert m["stride_num_preemptions_total"] > 0
        assert m["stride_kv_cache_pages_used"] == 0
        # A request that can never fit the pool gets an error, and the server lives on.
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        try:
            c.completions.create(model=MODEL, prompt="Go on:", max_tokens=400, temperature=0,
                                 extra_body={"ignore_eos": True})
            raise AssertionError("expected an error")
        except openai.APIStatusError as e:
            assert e.status_code == 503 and "KV pool" in str(e)
        assert complete(s.url, prompts[0], 48, logprobs=2).tokens == alone[0].tokens


def test_an_error_mid_stream_is_openai_error_object():
    """A request that outgrows the pool while streaming has sent its 200 and
    tokens already: the error comes as an SSE event, in OpenAI's error object
    (the official client raises it as APIError with that body)."""
    with StrideServer(SMOL, extra_args=["--kv-budget", "3M"]) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        chunks = 0
        try:
            for _ in c.completions.create(model=MODEL, prompt="Go on:", max_tokens=400, temperature=0, stream=True,
                                          extra_body={"ignore_eos": True}):
                chunks += 1
            raise AssertionError("expected an error")
        except openai.APIStatusError:
            raise AssertionError("the error came before the stream, not in it")
        except openai.APIError as e:
            body = e.body
        assert chunks > 0
        assert set(body) == {"message", "type", "param", "code"}, body
        assert body["type"] == "service_unavailable" and "KV pool" in body["message"], body
        assert body["param"] is None and (body["code"] is None or isinstance(body["code"], str)), body
