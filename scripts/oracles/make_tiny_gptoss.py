#!/usr/bin/env python3
"""A tiny random-weight gpt-oss + its transformers (eager, f32) logits.

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/make_tiny_gptoss.py [--out DIR]

gpt-oss's quirks all appear: learned per-head attention sinks, alternating
sliding-window (8 here) and full layers, q/k/v/o biases, a top-k-then-softmax
router with a bias, experts with biases and the clamped SwiGLU, and YaRN
(factor 4 over an original context of 64, no truncation) with 96-token
prompts, past the original context.

Writes under DIR (default tests/data/generated/tiny_gptoss):
  config.json + model.safetensors   the HF folder (f32)
  model-conv-f32.gguf               converted by llama.cpp's convert_hf_to_gguf.py
  model-conv-mxfp4.gguf             the same with the expert tensors in MXFP4
                                    (gguf-py's quantizer). Expert weights are
                                    drawn from MXFP4's values (e2m1 times a
                                    power of two per block of 32, each block
                                    holding its largest magnitude 6 * 2^k), so
                                    the MXFP4 file is the same model exactly.
  ids.json, logits.npy, logits_kvf16.npy, logits_policy<j>[_kvf16].npy
  manifest.json
"""
import argparse
import contextlib
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_to_gguf  # noqa: E402

VOCAB = 256
SEQ_LEN = 96
WINDOW = 8
SEED = 4321
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)

# --attention policies act on the full-attention layers; the windowed ones keep
# their native window. Predicates over (query pos, key pos).
POLICIES = {
    "window:size=16": lambda q, k: k > q - 16,
    "rswa:sinks=4,window=12,pos=abs": lambda q, k: (k < 4) | (k > q - 12),
}


def build_config():
    from transformers import GptOssConfig
    return GptOssConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_local_experts=4,
        num_experts_per_tok=2, sliding_window=WINDOW, max_position_embeddings=256,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                         "beta_fast": 32.0, "beta_slow": 1.0, "rope_theta": 150000.0,
                         "truncate": False})


def mxfp4_exact(shape, block_axis: int, rng: np.random.Generator) -> np.ndarray:
    """Values MXFP4 holds exactly: blocks of 32 along block_axis, each e2m1 times
    2^k with one element of magnitude 6 * 2^k (so any quantizer picks 2^k)."""
    a = np.moveaxis(np.zeros(shape, dtype=np.float32), block_axis, -1)
    n = a.shape[-1]
    assert n % 32 == 0
    blocks = a.reshape(-1, n // 32, 32)
    mags = E2M1[rng.integers(0, 8, size=blocks.shape)]
    signs = np.where(rng.random(blocks.shape) < 0.5, -1.0, 1.0).astype(np.float32)
    blocks = mags * signs
    top = rng.integers(0, 32, size=blocks.shape[:2])
    np.put_along_axis(blocks, top[..., None], (6.0 * np.where(rng.random(top.shape) < 0.5, -1, 1))[..., None]
                      .astype(np.float32), axis=-1)
    k = rng.integers(-7, -4, size=blocks.shape[:2]).astype(np.float32)  # 2^-7 .. 2^-5
    blocks = blocks * np.exp2(k)[..., None]
    return np.moveaxis(blocks.reshape(a.shape), -1, block_axis)


def randomize(model, gen: torch.Generator, rng: np.random.Generator):
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("experts.gate_up_proj"):  # [E, hidden, 2I]: x @ W, blocks along hidden
                p.copy_(torch.from_numpy(mxfp4_exact(tuple(p.shape), 1, rng)))
            elif name.endswith("experts.down_proj"):  # [E, I, hidden]: blocks along I
                p.copy_(torch.from_numpy(mxfp4_exact(tuple(p.shape), 1, rng)))
            elif "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("sinks"):
                p.copy_(torch.empty(p.shape).uniform_(-1.0, 2.5, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            p.copy_(p.half().float())


@contextlib.contextmanager
def kv_f16(enabled: bool = True):
    """K (after RoPE) and V rounded to f16 inside attention: the oracle for an f16 KV cache."""
    import transformers.models.gpt_oss.modeling_gpt_oss as m
    orig = m.eager_attention_forward
    if enabled:
        def rounded(module, query, key, value, *a, **k):
            return orig(module, query, key.half().float(), value.half().float(), *a, **k)
        m.eager_attention_forward = rounded
    try:
        yield
    finally:
        m.eager_attention_forward = orig


def logits_of(model, ids, mask=None):
    with torch.no_grad():
        return model(torch.tensor([ids]), attention_mask=mask, use_cache=False).logits[0].numpy()


def policy_mask(cfg, n, pred):
    q, k = torch.arange(n)[:, None], torch.arange(n)[None, :]

    def additive(allowed):
        return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]

    return {"full_attention": additive((k <= q) & pred(q, k)),
            "sliding_attention": additive((k <= q) & (k > q - cfg.sliding_window))}


def quantize_experts(src: str, dst: str):
    """Copies a GGUF, writing the *_exps weights in MXFP4 (gguf-py's quantizer)."""
    import gguf
    from gguf.quants import quantize
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, field.contents(), vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, field.contents(), vtype)
    for t in r.tensors:
        data = np.array(t.data)
        if t.name.endswith("_exps.weight"):
            q = quantize(data.astype(np.float32), gguf.GGMLQuantizationType.MXFP4)
            w.add_tensor(t.name, q, raw_dtype=gguf.GGMLQuantizationType.MXFP4)
        else:
            w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--out", default=os.path.join(root, "tests/data/generated/tiny_gptoss"))
    args = ap.parse_args()

    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = np.random.default_rng(SEED)
    ids = [int(x) for x in rng.integers(3, VOCAB, size=SEQ_LEN)]

    cfg = build_config()
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    randomize(model, torch.Generator().manual_seed(SEED), rng)
    model.eval()

    d = args.out
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model.save_pretrained(d, safe_serialization=True)
    if os.path.exists(os.path.join(d, "generation_config.json")):
        os.remove(os.path.join(d, "generation_config.json"))
    with open(os.path.join(d, "ids.json"), "w") as f:
        json.dump(ids, f)

    logits = logits_of(model, ids)  # [n_tokens, n_vocab]
    np.save(os.path.join(d, "logits.npy"), logits)
    with kv_f16():
        np.save(os.path.join(d, "logits_kvf16.npy"), logits_of(model, ids))
    policies = {}
    for j, (spec, pred) in enumerate(POLICIES.items()):
        policies[spec] = {}
        for kind in ("f32", "kvf16"):
            fname = f"logits_policy{j}{'' if kind == 'f32' else '_kvf16'}.npy"
            with kv_f16(kind == "kvf16"):
                np.save(os.path.join(d, fname), logits_of(model, ids, policy_mask(cfg, len(ids), pred)))
            policies[spec][kind] = fname

    hf_to_gguf.convert(d, os.path.join(d, "model-conv-f32.gguf"), "f32")
    quantize_experts(os.path.join(d, "model-conv-f32.gguf"), os.path.join(d, "model-conv-mxfp4.gguf"))

    manifest = {"ids": "ids.json", "sliding_window": WINDOW, "n_vocab": VOCAB, "seq_len": SEQ_LEN,
                "gguf": {"conv": "model-conv-f32.gguf", "mxfp4": "model-conv-mxfp4.gguf"},
                "logits": {"f32": "logits.npy", "kvf16": "logits_kvf16.npy"},
                "policies": policies, "logit_absmax": float(np.abs(logits).max())}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"tiny gpt-oss: |logits|max={np.abs(logits).max():.3f} -> {d}")


if __name__ == "__main__":
    main()
