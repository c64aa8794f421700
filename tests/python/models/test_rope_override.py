"""The RoPE override flags (--rope-scaling, --rope-scale, --yarn-orig-ctx, ...)
against transformers.

Tiny random-weight models whose GGUF carries no RoPE scaling (qwen2, llama of
scripts/oracles/make_tiny_models.py, made by scripts/setup) are scored by
stride with the override; the same weights are run by transformers (eager,
f32) with the scaling written into config.json. Each case also checks that
the scaling moves transformers' logits far more than the tolerance, so an
ignored override fails.

Run: ~/.cache/stride/venv/bin/python -m pytest -q tests/python/models/test_rope_override.py
"""
import json
import os
import subprocess

import numpy as np
import pytest

from stride_cli import ROOT

TINY = os.path.join(ROOT, "tests", "data", "generated", "tiny")
TOL = 1e-4          # --kv-type f32: stride equals transformers' f32 to this
MIN_EFFECT = 1e-2   # the scaling must move the reference logits by more than this
N_TOKENS = 96       # past the original context of 32 the cases give
VOCAB = 256

# (model, stride flags, the rope_parameters transformers gets on top of the file's theta)
CASES = {
    "qwen2-yarn": ("qwen2", ["--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx", "32"],
                   {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
    "qwen2-linear": ("qwen2", ["--rope-scaling", "linear", "--rope-scale", "4"],
                     {"rope_type": "linear", "factor": 4.0}),
    # llama.cpp's default type: a factor alone on an unscaled file is linear.
    "qwen2-freq-scale": ("qwen2", ["--rope-freq-scale", "0.5"], {"rope_type": "linear", "factor": 2.0}),
    "llama-yarn-betas": ("llama", ["--rope-scaling", "yarn", "--rope-scale", "8", "--yarn-orig-ctx", "32",
                                   "--yarn-beta-fast", "1", "--yarn-beta-slow", "0.1",
                                   "--yarn-attn-factor", "1.5"],
                         {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32,
                          "beta_fast": 1.0, "beta_slow": 0.1, "attention_factor": 1.5}),
    "llama-llama3": ("llama", ["--rope-scaling", "llama3", "--rope-scale", "8", "--yarn-orig-ctx", "32"],
                     {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 32}),
    "llama-freq-base": ("llama", ["--rope-freq-base", "300"], {"rope_type": "default", "rope_theta": 300.0}),
}


def _ids():
    return [int(x) for x in np.random.default_rng(36).integers(3, VOCAB, size=N_TOKENS)]


def _gguf(name):
    path = os.path.join(TINY, name, "model-f32.gguf")
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run scripts/setup")
    return path


@pytest.fixture(scope="module")
def hf_logits(tmp_path_factory):
    """Logits of the tiny HF folder `name` with config.json's rope_parameters
    updated by `params` (None: as generated)."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(2)

    def run(name, params):
        src = os.path.join(TINY, name)
        folder = tmp_path_factory.mktemp(name)
        for f in os.listdir(src):
            if f.endswith(".safetensors"):
                os.symlink(os.path.join(src, f), folder / f)
        with open(os.path.join(src, "config.json")) as f:
            cfg = json.load(f)
        if params is not None:
            rp = {"rope_theta": cfg["rope_parameters"]["rope_theta"], **params}
            cfg["rope_parameters"] = rp
            cfg["rope_theta"] = rp["rope_theta"]
            if rp["rope_type"] == "yarn":  # transformers derives yarn's factor from these two
                cfg["max_position_embeddings"] = int(rp["factor"] * rp["original_max_position_embeddings"])
        cfg["max_position_embeddings"] = max(cfg["max_position_embeddings"], N_TOKENS)
        with open(folder / "config.json", "w") as f:
            json.dump(cfg, f)
        model = AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                     dtype=torch.float32).eval()
        with torch.no_grad():
            return model(torch.tensor([_ids()]), use_cache=False).logits[0].numpy()
    return run


@pytest.mark.parametrize("case", sorted(CASES))
def test_override_matches_transformers(stride, hf_logits, case):
    name, flags, params = CASES[case]
    path = _gguf(name)
    assert stride.info(path)["rope"]["scaling"]["type"] == "none", "the test needs a file without scaling"
    want = hf_logits(name, params)
    plain = hf_logits(name, None)
    effect = np.abs(want - plain).max()
    assert effect > MIN_EFFECT, f"{case}: the scaling moves transformers' logits by only {effect:.3e}"
    got = stride.score(path, _ids(), extra=["--kv-type", "f32", *flags])
    assert got.shape == want.shape
    diff = np.abs(got - want).max()
    print(f"\n{case}: max|diff| vs transformers {diff:.3e} (the scaling itself moves them {effect:.3e})")
    assert diff <= TOL, f"{case}: max diff {diff:.3e} > {TOL}"


def test_info_shows_the_effective_scaling(stride):
    path = _gguf("qwen2")
    out = json.loads(stride._call(["info", "--model", path, "--json", "--rope-scaling", "yarn",
                                   "--rope-scale", "4", "--yarn-orig-ctx", "32"]))
    s = out["rope"]["scaling"]
    assert s["type"] == "yarn", s
    assert out["usable_context"] == max(4 * 32, out["n_ctx_train"]), out["usable_context"]
    text = stride._call(["info", "--model", path, "--rope-scaling", "linear", "--rope-scale", "2",
                         "--rope-freq-base", "5000"])
    assert "linear, factor 2" in text, text
    assert json.loads(stride._call(["info", "--model", path, "--json", "--rope-freq-base", "5000"]))[
        "rope"]["base"] == 5000


def _error(stride, *args, env=None):
    p = subprocess.run([stride.binary, *map(str, args)], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL, env=env)
    assert p.returncode != 0, (args, p.stdout)
    return p.stderr


@pytest.mark.parametrize("flags,needle", [
    (["--rope-scale", "-2"], "--rope-scale must be a number > 0"),
    (["--rope-scale", "abc"], "is not a number"),
    (["--rope-scaling", "ntk"], "unknown type 'ntk'"),
    (["--rope-scaling", "yarn", "--rope-scale", "4"], "needs --yarn-orig-ctx"),
    (["--rope-scaling", "yarn", "--yarn-orig-ctx", "32"], "needs --rope-scale"),
    (["--rope-scaling", "llama3", "--rope-scale", "8"], "needs --yarn-orig-ctx"),
    (["--rope-scaling", "none", "--rope-scale", "4"], "takes no --rope-scale"),
    (["--rope-scaling", "longrope"], "long/short factors"),
    (["--yarn-orig-ctx", "64"], "add --rope-scaling yarn"),
    (["--rope-scaling", "linear", "--rope-scale", "2", "--yarn-beta-fast", "8"], "apply to yarn"),
    (["--rope-scale", "2", "--rope-freq-scale", "0.5"], "not both"),
])
def test_invalid_override_is_a_clear_error(stride, flags, needle):
    err = _error(stride, "info", "--model", _gguf("qwen2"), *flags)
    assert needle in err, err


def test_serve_config_keys_and_environment(stride, tmp_path):
    """serve reads the same override from its config file and STRIDE_* variables."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rope_scaling: ntk\n")
    err = _error(stride, "serve", "--config", cfg, "--model", _gguf("qwen2"), "--port", "0")
    assert "rope_scaling" in err and "unknown type 'ntk'" in err, err
    env = dict(os.environ, STRIDE_ROPE_SCALING="yarn", STRIDE_ROPE_SCALE="4")
    err = _error(stride, "serve", "--model", _gguf("qwen2"), "--port", "0", env=env)
    assert "needs --yarn-orig-ctx" in err, err


def test_serve_applies_config_then_environment_then_flags(tmp_path):
    """File < STRIDE_* < flags, as every serve key; the start-up log names the result."""
    from stride_server import SMOL, StrideServer
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rope_scaling: yarn\nrope_scale: 2\nyarn_orig_ctx: 2048\n")
    with StrideServer(SMOL, config=str(cfg), env={"STRIDE_ROPE_SCALE": "4"},
                      extra_args=["--yarn-beta-fast", "16", "--kv-budget", "16M"]) as s:
        status, _, body = s.post("/v1/chat/completions", {"model": s.model_name, "messages": [{"role": "user", "content": "Hi"}],
                                                          "max_tokens": 4})
        assert status == 200, body
        logs = s.logs()
    assert '"rope_scaling":"yarn, factor 4, original context 2048, beta fast 16 slow 1"' in logs, logs[-2000:]
