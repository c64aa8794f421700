"""Decoding token by token must give the same log-probs as one prefill of the
same sequence, for every attention policy (tolerance 5e-4 in f32).

`stride score --chunk 1` runs the sequence one token at a time through the KV
cache (the decode path); `--chunk 256` runs it as one prefill chunk."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
STRIDE = ROOT / "build" / "stride"
TINY = ROOT / "tests" / "data" / "generated" / "tiny"

POLICIES = ["dense", "window:size=5", "rswa:sinks=2,window=6", "rswa:sinks=2,window=6,pos=abs"]


def score(model, ids, policy, chunk, tmp_path):
    out = tmp_path / f"logits_{chunk}.f32"
    res = subprocess.run(
        [str(STRIDE), "score", "--model", str(model), "--ids", " ".join(map(str, ids)),
         "--attention", policy, "--chunk", str(chunk), "--threads", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    meta = json.loads(res.stdout.strip().splitlines()[-1])
    logits = np.fromfile(out, dtype=np.float32).reshape(meta["n_tokens"], meta["n_vocab"])
    return logits


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def tiny_models():
    names = ["llama", "mistral", "qwen2", "gemma3"]
    return [TINY / n for n in names]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model_dir", tiny_models(), ids=lambda p: p.name)
def test_decode_equals_prefill(model_dir, policy, tmp_path):
    assert model_dir.exists(), f"{model_dir} missing: run scripts/setup"
    ids = json.loads((model_dir / "ids.json").read_text())
    prefill = log_softmax(score(model_dir, ids, policy, 256, tmp_path))
    decode = log_softmax(score(model_dir, ids, policy, 1, tmp_path))
    mixed = log_softmax(score(model_dir, ids, policy, 7, tmp_path))
    err = np.abs(prefill - decode).max()
    err_mixed = np.abs(prefill - mixed).max()
    print(f"{model_dir.name} {policy}: max |logp diff| decode {err:.2e}, chunk-7 {err_mixed:.2e}")
    assert err < 5e-4
    assert err_mixed < 5e-4


# Mistral's layers are all natively windowed, so a user policy leaves it unchanged.
@pytest.mark.parametrize("model_dir", [TINY / n for n in ("llama", "qwen2", "gemma3")], ids=lambda p: p.name)
def test_policies_change_long_range_logits(model_dir, tmp_path):
    """A window shorter than the sequence must change late logits (the policy
    really masks), and must not change logits of positions inside the window."""
    ids = json.loads((model_dir / "ids.json").read_text())
    assert len(ids) > 12
    dense = score(model_dir, ids, "dense", 256, tmp_path)
    win = score(model_dir, ids, "window:size=4", 256, tmp_path)
    assert np.abs(dense[:4] - win[:4]).max() < 1e-5
    assert np.abs(dense[-1] - win[-1]).max() > 1e-4


def test_layer_overrides(tmp_path):
    """--layer-attention wins over --attention: overriding every layer back to
    dense gives dense logits; overriding some layers changes them."""
    model = TINY / "llama"
    ids = json.loads((model / "ids.json").read_text())
    n_layer = json.loads((model / "config.json").read_text())["num_hidden_layers"]

    def run(*extra):
        out = tmp_path / "o.f32"
        res = subprocess.run([str(STRIDE), "score", "--model", str(model), "--ids", " ".join(map(str, ids)),
                              "--out", str(out), *extra], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return np.fromfile(out, dtype=np.float32)

    dense = run()
    all_back = run("--attention", "window:size=4", "--layer-attention", f"0-{n_layer - 1}=dense")
    one = run("--layer-attention", "0=window:size=4")
    assert np.abs(dense - all_back).max() == 0
    assert np.abs(dense - one).max() > 1e-4
    bad = subprocess.run([str(STRIDE), "score", "--model", str(model), "--ids", "1 2", "--out", str(tmp_path / "x"),
                          "--layer-attention", f"0-{n_layer}=dense"], capture_output=True, text=True)
    assert bad.returncode == 1 and "does not exist" in bad.stderr
