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
