#!/usr/bin/env python3
"""Exact-arithmetic oracle for the real quantized models: every GGUF tensor is
dequantized (gguf-py) to f32, loaded into the HF transformers model, and the
llama.cpp goldens' sequences are scored in f32 eager attention.

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/dequant_reference.py \
      [--goldens tests/data/generated/llamacpp_goldens.json] \
      [--out tests/data/generated/dequant_reference.json]

This separates two error sources: llama.cpp quantizes activations (to 8 bits)
for its quantized dot products and keeps an f16 KV cache, so its logits are not
the exact function of the quantized weights either. The test compares both
engines with this reference (top-K log-probs at every generated position).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_gguf import _map_name  # noqa: E402

TOP_K = 16


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of tiny_gguf.permute_qk: llama.cpp interleaved rows -> HF halves."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def field(r, key):
    return r.fields[key].contents()


def build_hf(path: str):
    from transformers import AutoModelForCausalLM, Gemma3TextConfig, LlamaConfig
    r = gguf.GGUFReader(path)
    arch = field(r, "general.architecture")
    g = lambda k, d=None: field(r, f"{arch}.{k}") if f"{arch}.{k}" in r.fields else d  # noqa: E731
    tensors = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
               for t in r.tensors}
    n_vocab = tensors["token_embd.weight"].shape[0]
    common = dict(vocab_size=n_vocab, hidden_size=g("embedding_length"),
                  intermediate_size=g("feed_forward_length"), num_hidden_layers=g("block_count"),
                  num_attention_heads=g("attention.head_count"),
                  num_key_value_heads=g("attention.head_count_kv"),
                  max_position_embeddings=g("context_length"),
                  rms_norm_eps=g("attention.layer_norm_rms_epsilon"),
                  tie_word_embeddings="output.weight" not in tensors)
    if arch == "llama":
        cfg = LlamaConfig(**common, rope_theta=g("rope.freq_base", 10000.0),
                          head_dim=g("rope.dimension_count"))
        name = "llama"
    elif arch == "gemma3":
        cfg = Gemma3TextConfig(**common, head_dim=g("attention.key_length"),
                               sliding_window=g("attention.sliding_window"),
                               query_pre_attn_scalar=g("attention.key_length"),
                               rope_theta=g("rope.freq_base"), rope_local_base_freq=10000.0)
        name = "gemma3"
    else:
        raise SystemExit(f"unsupported arch {arch}")
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    hf_names = {}
    for hf_name in model.state_dict():
        if hf_name == "lm_head.weight":
            hf_names["output.weight"] = hf_name
            continue
        hf_names[_map_name(hf_name, name)] = hf_name
    state = {}
    for gname, w in tensors.items():
        if arch == "llama" and gname.endswith("attn_q.weight"):
            w = unpermute_qk(w, cfg.num_attention_heads)
        elif arch == "llama" and gname.endswith("attn_k.weight"):
            w = unpermute_qk(w, cfg.num_key_value_heads)
        if arch == "gemma3" and gname.endswith("norm.weight"):
            w = w - 1.0
        state[hf_names[gname]] = torch.from_numpy(np.ascontiguousarray(w))
    if cfg.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"{path}: missing {missing} unexpected {unexpected}")
    return model.eval()


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    gen_dir = os.path.join(root, "tests/data/generated")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--goldens", default=os.path.join(gen_dir, "llamacpp_goldens.json"))
    ap.add_argument("--out", default=os.path.join(gen_dir, "dequant_reference.json"))
    a = ap.parse_args()
    torch.set_num_threads(2)
    with open(a.goldens) as f:
        goldens = json.load(f)
    out = {"top_k": TOP_K, "models": {}}
    for key, spec in goldens["models"].items():
        model = build_hf(os.path.join(root, "models", spec["file"]))
        cases = []
        for case in spec["cases"]:
            p, gen = case["prompt_ids"], case["generated_ids"]
            with torch.no_grad():
                logits = model(torch.tensor([p + gen[:-1]]), use_cache=False).logits[0]
            lp = torch.log_softmax(logits[len(p) - 1:].double(), dim=-1)
            vals, idx = lp.topk(TOP_K, dim=-1)
            cases.append({"name": case["name"], "topk_ids": idx.tolist(), "topk_logprobs": vals.tolist()})
            same = int((idx[:, 0] == torch.tensor(gen)).sum())
            print(f"dequant-f32 {key}/{case['name']}: top-1 equals llama.cpp's greedy token "
                  f"{same}/{len(gen)}")
        out["models"][key] = {"cases": cases}
        del model
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
