"""`stride run --json`: the start-up figure it reports, and a load on several
threads (the weights repacked several matrices at once) that computes what a
load on one thread does."""
import json
import pathlib
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
STRIDE = ROOT / "build" / "stride"
SMOL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def run_json(threads):
    t0 = time.monotonic()
    res = subprocess.run([str(STRIDE), "run", "-m", str(SMOL), "--prompt-ids", "1 504 3458 282 260", "-n", "6",
                          "--temperature", "0", "--ignore-eos", "--json", "--threads", str(threads)],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1]), wall


def test_load_seconds_is_reported_and_within_the_run():
    j, wall = run_json(2)
    assert isinstance(j["load_seconds"], float)
    assert 0 < j["load_seconds"] < wall
    assert j["load_seconds"] + j["prefill_seconds"] + j["decode_seconds"] < wall


def test_loading_on_two_threads_generates_what_one_thread_does():
    one, _ = run_json(1)
    two, _ = run_json(2)
    assert one["threads"] == 1 and two["threads"] == 2
    assert len(one["generated_ids"]) == 6
    assert one["generated_ids"] == two["generated_ids"]


def test_logprobs_are_the_log_softmax_of_each_step_logits(tmp_path):
    """Each generated token's `logprobs` entry is log softmax of the logits that chose it, computed
    here in float64 from `stride score` of the prompt and the generated tokens (one forward pass,
    so equal to rounding of the batched matmuls)."""
    import numpy as np
    j, _ = run_json(2)
    prompt = [1, 504, 3458, 282, 260]
    ids = prompt + j["generated_ids"]
    out = tmp_path / "logits.f32"
    res = subprocess.run([str(STRIDE), "score", "-m", str(SMOL), "--ids", " ".join(map(str, ids)), "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    logits = np.fromfile(out, dtype=np.float32).reshape(len(ids), -1).astype(np.float64)
    rows = logits[len(prompt) - 1:len(ids) - 1]
    lse = np.log(np.exp(rows - rows.max(1, keepdims=True)).sum(1)) + rows.max(1)
    want = rows[np.arange(len(rows)), j["generated_ids"]] - lse
    assert len(j["logprobs"]) == len(j["generated_ids"]) == 6
    assert np.allclose(j["logprobs"], want, atol=2e-3), (j["logprobs"], want.tolist())
    assert all(lp <= 0 for lp in j["logprobs"])


def run_pages(prompt_len, n, attention):
    ids = " ".join(str(260 + (i * 7919) % 40000) for i in range(prompt_len))
    res = subprocess.run([str(STRIDE), "run", "-m", str(SMOL), "--prompt-ids", ids, "-n", str(n), "--temperature", "0",
                          "--ignore-eos", "--json", "--threads", "2", "-a", attention],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_decode_pages_are_those_a_causal_step_sees():
    """Dense decoding reads every page a causal step sees: the step that writes position p attends
    keys 0..p, ceil((p + 1) / page tokens) pages in each of SmolLM2's 30 layers (3 kv heads of 64
    dimensions, f16 K and V: 768 bytes per token and layer). The prompt's reads are not counted."""
    prompt, n = 100, 6
    j = run_pages(prompt, n, "dense")
    page_tokens = j["kv"]["stride_kv_cache_page_bytes"] // (3 * (64 + 64) * 2)
    steps = range(prompt, prompt + n - 1)  # the last generated token is not run through the model
    want = 30 * sum(-(-(p + 1) // page_tokens) for p in steps)
    assert j["decode_pages_present"] == want
    assert j["decode_pages_read"] == want


def test_top_k_decode_reads_a_tenth_of_the_pages_and_dense_prefill_is_not_counted():
    j = run_pages(1024, 5, "topk:sparsity=0.9,prefill=dense")
    assert 0 < j["decode_pages_read"] < 0.25 * j["decode_pages_present"]
    assert j["kv"]["stride_attention_pages_read_total"] > 10 * j["decode_pages_read"]
