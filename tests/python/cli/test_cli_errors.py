"""Bad input gets one clear line on stderr and a non-zero exit; never a crash."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
STRIDE = ROOT / "build" / "stride"
SMOL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
VOCAB = ROOT.parent / "shared" / "fixtures" / "vocab" / "ggml-vocab-gpt-2.gguf"


def stride(*args, timeout=120):
    return subprocess.run([str(STRIDE), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def assert_clean_error(res, *needles):
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    lines = [l for l in res.stderr.splitlines() if l.strip() and not l.startswith("\r")]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines[0]
    for n in needles:
        assert n.lower() in lines[0].lower(), (n, lines[0])


@pytest.mark.parametrize("cmd", ["run", "score", "info", "tokenize"])
def test_help_on_every_command(cmd):
    res = stride(cmd, "--help")
    assert res.returncode == 0
    assert "--model" in res.stdout


def test_missing_model():
    assert_clean_error(stride("info", "--model", "/nonexistent/model.gguf"), "no such file")


def test_not_a_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a model at all" * 10)
    assert_clean_error(stride("info", "--model", bad), "magic")


def test_truncated_real_model(tmp_path):
    bad = tmp_path / "trunc.gguf"
    with open(SMOL, "rb") as f:
        bad.write_bytes(f.read(3_000_000))
    res = stride("run", "--model", bad, "--prompt", "hi", "-n", "1")
    assert_clean_error(res, "past end")


def test_bad_policy():
    res = stride("run", "--model", SMOL, "--prompt", "hi", "--attention", "window:size=-3")
    assert_clean_error(res, "window")
    res = stride("run", "--model", SMOL, "--prompt", "hi", "--attention", "bogus")
    assert_clean_error(res, "bogus")


def test_token_id_out_of_range(tmp_path):
    res = stride("score", "--model", SMOL, "--ids", "1 2 999999", "--out", tmp_path / "x")
    assert_clean_error(res, "999999")


def test_exhausted_kv_pool(tmp_path):
    ids = " ".join(["28"] * 300)
    res = stride("score", "--model", SMOL, "--ids", ids, "--kv-budget", "64K", "--out", tmp_path / "x")
    assert_clean_error(res, "exhausted")


def test_rswa_fits_where_dense_does_not(tmp_path):
    """The same small pool holds an R-SWA sequence of any length."""
    ids = " ".join(["28"] * 600)
    budget = "4M"  # 30 layers x ~5 pages of 32 tokens
    dense = stride("score", "--model", SMOL, "--ids", ids, "--kv-budget", budget, "--out", tmp_path / "d")
    assert_clean_error(dense, "exhausted")
    rswa = stride("score", "--model", SMOL, "--ids", ids, "--kv-budget", budget, "--chunk", "16",
                  "--attention", "rswa:sinks=4,window=60", "--out", tmp_path / "r")
    assert rswa.returncode == 0, rswa.stderr


def test_tokenize_vocab_only_file():
    res = stride("tokenize", "--model", VOCAB, "--prompt", "Hello world")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "15496 995"


@pytest.mark.parametrize("arg", ["--threads", "2x", "0", "-3", "100000"])
def test_machine_peak_rejects_bad_thread_counts(arg):
    # bench/compare.py and bench/shapes.py read its JSON line; a bad count is a usage error, not a bogus figure.
    res = subprocess.run([str(ROOT / "build" / "machine_peak"), arg], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == ""
    assert res.stderr.strip().startswith("usage: machine_peak"), res.stderr


def test_shapes_bench_rejects_a_path_the_cpu_cannot_run(tmp_path):
    # A stride that reports only the avx2 path: asking bench/shapes.py for avx512 stops before any run.
    fake = tmp_path / "stride"
    fake.write_text('#!/bin/sh\necho \'{"cpu": {"supported_paths": ["avx2"]}}\'\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "STRIDE_BIN": str(fake)}
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "shapes.py"), "--paths", "avx512", "--triad-gbs", "20",
                          "--llama-bench", "/bin/true", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    assert "cannot run stride path(s) avx512 (it runs avx2)" in res.stderr, res.stderr
    assert not (tmp_path / "out.json").exists()
