"""Top-k hot set in the server: with `resident=N` and an offload tier, cold
top-k pages move to the tier and come back when picked. The completion and
its log-probs equal the same policy without a resident limit (pages travel as
exact byte images), and the /metrics counters show the traffic."""
import openai

from stride_server import SMOL, StrideServer

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = " ".join(f"entry{i} is {i * 7 % 13}." for i in range(120))  # ~ 900 tokens: ~28 pages per layer


def run(policy, env=None):
    with StrideServer(SMOL, extra_args=["--kv-budget", "96M", "--attention", policy], env=env) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        r = c.completions.create(model=MODEL, prompt=PROMPT, max_tokens=24, temperature=0, logprobs=2,
                                 extra_body={"ignore_eos": True})
        assert r.usage.completion_tokens == 24
        return r.choices[0].logprobs, s.metrics()


def test_hot_set_output_equals_unlimited_topk():
    base, m0 = run("topk:sparsity=0.75")
    assert m0["stride_kv_topk_pages_offloaded_total"] == 0
    hot, m = run("topk:sparsity=0.75,resident=8", env={"STRIDE_KV_OFFLOAD_BYTES": "256M"})
    assert hot.tokens == base.tokens
    assert hot.token_logprobs == base.token_logprobs
    assert hot.top_logprobs == base.top_logprobs
    assert m["stride_kv_topk_pages_offloaded_total"] > 0
    assert m["stride_kv_topk_pages_restored_total"] > 0
    assert m["stride_kv_topk_pages_prefetched_total"] > 0
    assert m["stride_kv_topk_restore_failed_total"] == 0
    assert m["stride_kv_cache_pages_used"] == 0  # the finished sequence gave every page back
