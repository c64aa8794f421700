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
