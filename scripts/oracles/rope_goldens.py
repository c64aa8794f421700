#!/usr/bin/env python3
"""RoPE scaling goldens: per-pair inverse frequencies and attention factor from
transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils), the oracle of
stride's model/rope_frequencies.

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/rope_goldens.py [--out FILE]

Each case holds the config.json fields stride reads (rope_parameters plus
max_position_embeddings and, Phi-3 style, a top-level
original_max_position_embeddings), the sequence length transformers was asked
for (LongRoPE switches factor sets on it), and transformers' inv_freq and
attention factor. Default FILE: tests/data/generated/rope_goldens.json.
"""
import argparse
import json
import os

import numpy as np


def _factors(n, seed, lo, hi):
    rng = np.random.default_rng(seed)
    return [float(x) for x in np.round(rng.uniform(lo, hi, size=n), 4)]


def _case(name, head_dim, max_pos, theta, seq_len=None, top=None, **rope):
    fields = dict(head_dim=head_dim, max_position_embeddings=max_pos, **(top or {}),
                  rope_parameters={"rope_theta": theta, **rope})
    return name, fields, seq_len


def cases():
    """(name, config fields, seq_len or None)."""
    orig = "original_max_position_embeddings"
    out = [
        _case("default", 64, 4096, 10000.0, rope_type="default"),
        _case("linear_x4", 64, 16384, 10000.0, rope_type="linear", factor=4.0),
        # Qwen2.5-style YaRN: 32K trained, factor 4.
        _case("yarn_qwen25", 128, 32768, 1e6, rope_type="yarn", factor=4.0, **{orig: 32768}),
        _case("yarn_betas_untruncated", 64, 8192, 10000.0, rope_type="yarn", factor=8.0,
              beta_fast=16.0, beta_slow=2.0, truncate=False, attention_factor=1.3, **{orig: 2048}),
        # DeepSeek-style magnitude: mscale / mscale_all_dim.
        _case("yarn_mscale", 64, 163840, 10000.0, rope_type="yarn", factor=40.0, mscale=1.0,
              mscale_all_dim=0.707, **{orig: 4096}),
        _case("yarn_tiny", 16, 256, 10000.0, rope_type="yarn", factor=4.0, **{orig: 64}),
        # Llama 3.1 8B, Llama 3.2 1B, and the tiny test model's shape.
        _case("llama3_8b", 128, 131072, 500000.0, rope_type="llama3", factor=8.0,
              low_freq_factor=1.0, high_freq_factor=4.0, **{orig: 8192}),
        _case("llama3_1b", 64, 131072, 500000.0, rope_type="llama3", factor=32.0,
              low_freq_factor=1.0, high_freq_factor=4.0, **{orig: 8192}),
        _case("llama3_tiny", 16, 256, 10000.0, rope_type="llama3", factor=8.0,
              low_freq_factor=1.0, high_freq_factor=4.0, **{orig: 64}),
    ]
    # Phi-3-mini-128k style: head 96, original 4096 at the top level, no factor;
    # transformers switches to the long factors above 4096 tokens.
    short, long_ = _factors(48, 1, 1.0, 1.2), _factors(48, 2, 1.0, 60.0)
    for seq in (None, 4096, 4097):
        out.append(_case(f"longrope_phi3_seq{seq}", 96, 131072, 10000.0, seq, top={orig: 4096},
                         rope_type="longrope", short_factor=short, long_factor=long_))
    # Explicit factor and attention factor.
    short, long_ = _factors(32, 3, 0.9, 1.5), _factors(32, 4, 1.0, 20.0)
    for seq in (None, 9000):
        out.append(_case(f"longrope_explicit_seq{seq}", 64, 32768, 250000.0, seq,
                         rope_type="longrope", factor=4.0, attention_factor=1.25,
                         short_factor=short, long_factor=long_, **{orig: 8192}))
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(root, "tests/data/generated/rope_goldens.json"))
    args = ap.parse_args()

    import copy

    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    results = []
    for name, fields, seq_len in cases():
        config_json = copy.deepcopy(fields)
        cfg = LlamaConfig(hidden_size=fields["head_dim"] * 4, num_attention_heads=4,
                          num_key_value_heads=4, **copy.deepcopy(fields))
        rope_type = fields["rope_parameters"]["rope_type"]
        if rope_type == "default":
            base = fields["rope_parameters"]["rope_theta"]
            dim = fields["head_dim"]
            import torch
            inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
            attn = 1.0
        else:
            inv, attn = ROPE_INIT_FUNCTIONS[rope_type](cfg, "cpu", seq_len=seq_len)
        results.append({"name": name, "config": config_json, "seq_len": seq_len,
                        "inv_freq": [float(x) for x in inv.double().tolist()],
                        "attention_factor": float(attn)})
        print(f"rope golden {name}: {len(inv)} pairs, attention factor {float(attn):.6f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"cases": results}, f, indent=1)


if __name__ == "__main__":
    main()
