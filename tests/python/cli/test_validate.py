"""`stride validate` and `stride plan` end to end on SmolLM2 (short lengths:
the suite must stay quick; the 8K-32K figures are benchmark runs)."""
import json
import os
import subprocess

import pytest

import stride_cli

MODEL = os.path.join(stride_cli.ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TEXT = ("The Debian project is an association of individuals who have made common cause to "
        "create a free operating system. This operating system is called Debian. ") * 40


def run(stride, *args, ok=True):
    p = subprocess.run([stride.binary, *map(str, args)], capture_output=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    if ok:
        assert p.returncode == 0, p.stderr.decode()[-2000:]
    return p


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("validate") / "text.txt"
    path.write_text(TEXT)
    return str(path)


def test_validate_dense_against_itself_is_exact_and_window_drifts(stride, text_file, tmp_path):
    out = tmp_path / "v.json"
    run(stride, "validate", "-m", MODEL, "-a", "dense", "-a", "rswa:sinks=4,window=32",
        "--lengths", "32,160", "--text", text_file, "--json", out, "--threads", 2, "--chunk", 64)
    rows = json.loads(out.read_text())["fidelity"]
    by = {(r["policy"], r["length"]): r for r in rows}
    d = by[("dense", 160)]
    assert d["mse"] == 0 and d["kl"] == pytest.approx(0, abs=1e-12) and d["top1"] == 1
    assert d["ppl_dense"] == d["ppl_policy"] and 1 < d["ppl_dense"] < 100
    # Up to the window the policy sees everything dense sees: identical logits.
    assert by[("rswa:sinks=4,window=32", 32)]["mse"] == 0
    far = by[("rswa:sinks=4,window=32", 160)]
    assert far["mse"] > 0 and far["kl"] > 0 and far["top1"] < 1
    assert far["ppl_dense"] == d["ppl_dense"]
    assert 0 < far["pages_read_share"] < 1


def test_validate_errors_are_clear(stride, tmp_path):
    p = run(stride, "validate", "-m", MODEL, "-a", "dense", "--text", tmp_path / "missing.txt",
            "--lengths", "64", ok=False)
    assert p.returncode != 0 and b"cannot read" in p.stderr
    p = run(stride, "validate", "-m", MODEL, "-a", "topk:sparsity=2", "--lengths", "64", ok=False)
    assert p.returncode != 0 and b"sparsity" in p.stderr


def test_plan_kv_is_flat_under_rswa_and_linear_under_dense(stride):
    def plan(policy, ctx):
        p = run(stride, "plan", "-m", MODEL, "-a", policy, "-c", ctx, "--json", "--budget", "1G")
        return json.loads(p.stdout.decode().strip().splitlines()[-1])

    d8, d64 = plan("dense", 8192), plan("dense", 65536)
    # 30 layers x 2 x 3 kv heads x 64 x 2 bytes = 23,040 bytes per token (dense f16).
    assert d8["kv_bytes_per_token_dense"] == 23040
    assert d64["kv_bytes"] - d8["kv_bytes"] == (65536 - 8192) * 23040
    r8, r1m = plan("rswa:sinks=4,window=4092", 8192), plan("rswa:sinks=4,window=4092", 1 << 20)
    assert r8["kv_bytes"] == r1m["kv_bytes"]
    assert r1m["largest_context"] >= 1 << 20  # flat KV: any length fits
    assert 0 < d8["largest_context"] < 1 << 20
    assert d8["total_bytes"] == d8["weight_bytes"] + d8["kv_bytes"] + d8["activation_bytes"]
    assert d8["seed_formula_bytes"] == 4 * (8192 * 8192 + 8192 * 576)


def test_validate_int8_kv_against_dense_f16_loses_little(stride, text_file, tmp_path):
    # The cost of int8 KV alone: dense attention, int8 pages vs the f16 reference.
    out = tmp_path / "v8.json"
    p = run(stride, "validate", "-m", MODEL, "-a", "dense", "--kv-type", "int8", "--lengths", "64,256",
            "--text", text_file, "--json", out, "--threads", 2, "--chunk", 64)
    assert b"kv: policy int8, dense reference f16" in p.stdout
    report = json.loads(out.read_text())
    assert report["kv_type"] == "int8" and report["reference_kv_type"] == "f16"
    for r in report["fidelity"]:
        assert r["mse"] > 0  # the int8 side really differs
        assert r["top1"] >= 0.9 and r["kl"] < 0.02, r
        assert abs(r["ppl_policy"] / r["ppl_dense"] - 1) < 0.05, r


def test_kv_type_errors_are_clear(stride, text_file):
    p = run(stride, "validate", "-m", MODEL, "-a", "dense", "--kv-type", "int4", "--lengths", "64",
            "--text", text_file, ok=False)
    assert p.returncode != 0 and b"f16, f32 or int8" in p.stderr
    p = run(stride, "plan", "-m", MODEL, "--kv-type", "q8", ok=False)
    assert p.returncode != 0 and b"f16, f32 or int8" in p.stderr


def test_plan_int8_kv_counts_bytes_and_scales(stride):
    def plan(kv):
        p = run(stride, "plan", "-m", MODEL, "-a", "dense", "-c", 8192, "--json", "--kv-type", kv)
        return json.loads(p.stdout.decode().strip().splitlines()[-1])

    f16, i8 = plan("f16"), plan("int8")
    # 30 layers x 3 kv heads x (2 x 64 int8 + a K and a V f32 scale) = 12,240 bytes per token.
    assert i8["kv_bytes_per_token_dense"] == 12240 and i8["kv_type"] == "int8"
    assert f16["kv_bytes_per_token_dense"] == 23040
    assert i8["kv_bytes"] * 23040 == f16["kv_bytes"] * 12240
