"""32 concurrent greedy streams against the default max_batch of 8 (so 24 wait
in the queue, which holds 64): every stream completes and equals, token for
token, the same request run alone. Batching is invariant by construction: the
packed matmul kernels compute every token column with the same arithmetic
whatever the batch holds (quantization is per token row), and attention runs
per sequence over its own pages, so a batched step gives bit-identical logits
(tests/unit/model/test_packed_batch.cpp checks that directly)."""
import concurrent.futures as cf

import openai
import pytest

from stride_server import SMOL, StrideServer

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_STREAMS = 32


def stream(url, prompt, n):
    c = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=600)
    text, tokens, tops, finish = "", [], [], None
    for ch in c.completions.create(model=MODEL, prompt=prompt, max_tokens=n, temperature=0, stream=True,
                                   logprobs=2, extra_body={"ignore_eos": True}):
        if not ch.choices:
            continue
        choice = ch.choices[0]
        text += choice.text
        if choice.logprobs and choice.logprobs.tokens:
            tokens += choice.logprobs.tokens
            tops += choice.logprobs.top_logprobs
        finish = choice.finish_reason or finish
    return text, tokens, tops, finish


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--max-batch", "8", "--max-queue", "64"])
    yield s
    s.__exit__(None, None, None)


def test_32_concurrent_streams_equal_alone(srv):
    prompts = [f"Tell me one fact about the number {i}." for i in range(N_STREAMS)]
    alone = [stream(srv.url, p, 10) for p in prompts]
    with cf.ThreadPoolExecutor(N_STREAMS) as ex:
        together = list(ex.map(lambda p: stream(srv.url, p, 10), prompts))
    for i, ((a_text, a_toks, a_tops, _), (t_text, t_toks, t_tops, t_finish)) in enumerate(zip(alone, together)):
        assert t_finish == "length" and len(t_toks) == 10
        assert a_text == "".join(a_toks) and t_text == "".join(t_toks)
        assert t_toks == a_toks, (i, a_toks, t_toks)
        assert t_tops == a_tops, (i, a_tops, t_tops)  # log-probs too: same logits, bit for bit
    m = srv.metrics()
    assert m["stride_kv_cache_pages_used"] == 0 and m["stride_num_requests_running"] == 0
    assert m['stride_request_success_total{finished_reason="length"}'] >= 2 * N_STREAMS
