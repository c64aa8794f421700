#!/usr/bin/env python3
"""A small random llama whose rows are whole K-quant super-blocks (n_embd
256), and llama.cpp's logits with its output head quantized to Q4_K, Q5_K,
Q4_0 and Q5_0 by llama.cpp's own quantizer; and Qwen2.5-Coder-0.5B (n_embd
896, Q8_0 head) with its head quantized to Q5_0 by llama.cpp: the oracle of
`--head-type` (tests/python/models/test_head_type.py).

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/head_type_model.py \
      [--out-dir tests/data/generated/head_type] [--models-dir models]

Writes into --out-dir:
  model-f32.gguf        every weight f32 (2 layers, 4/2 heads, ffn 512, vocab 256)
  model-<t>-head.gguf   the same with output.weight quantized to <t> (q4_k,
                        q5_k, q4_0, q5_0) by ggml_quantize_chunk
                        (llama-cpp-python's libggml)
  ids.json              the token sequence
  logits-<v>.npy        llama.cpp's logits [n_tokens, 256] on each file
                        (v: f32, q4_k, q5_k, q4_0, q5_0), f32 KV cache
  qwen-ids.json         a token sequence for Qwen2.5-Coder-0.5B
  qwen-logits-q5_0.npy  llama.cpp's logits [n_tokens, 151936] on that model
                        with its output.weight requantized to Q5_0 (the
                        requantized file itself is not kept)
"""
import argparse
import json
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_gguf import write_gguf  # noqa: E402
from head_quant_rows import libggml  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

SEED = 38
N_TOKENS = 48
HEAD_TYPES = {"q4_k": gguf.GGMLQuantizationType.Q4_K, "q5_k": gguf.GGMLQuantizationType.Q5_K,
              "q4_0": gguf.GGMLQuantizationType.Q4_0, "q5_0": gguf.GGMLQuantizationType.Q5_0}
QWEN = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_TOKENS = 32


def make_config():
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                       tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5,
                       bos_token_id=1, eos_token_id=2, pad_token_id=0)


def make_state(cfg, rng):
    """Weights scaled so activations stay O(1) and logits spread over a few nats."""
    E, F, V = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    hd = E // cfg.num_attention_heads
    kv = cfg.num_key_value_heads * hd

    def lin(n_out, n_in):
        return rng.normal(0, 1 / np.sqrt(n_in), (n_out, n_in)).astype(np.float32)

    s = {"model.embed_tokens.weight": rng.normal(0, 1, (V, E)).astype(np.float32),
         "model.norm.weight": np.ones(E, np.float32),
         "lm_head.weight": rng.normal(0, 0.15, (V, E)).astype(np.float32)}
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = np.ones(E, np.float32)
        s[p + "post_attention_layernorm.weight"] = np.ones(E, np.float32)
        s[p + "self_attn.q_proj.weight"] = lin(E, E)
        s[p + "self_attn.k_proj.weight"] = lin(kv, E)
        s[p + "self_attn.v_proj.weight"] = lin(kv, E)
        s[p + "self_attn.o_proj.weight"] = lin(E, E)
        s[p + "mlp.gate_proj.weight"] = lin(F, E)
        s[p + "mlp.up_proj.weight"] = lin(F, E)
        s[p + "mlp.down_proj.weight"] = lin(E, F)
    return s


def with_quantized_head(src, dst, qtype, lib):
    """A copy of src whose output.weight is qtype, quantized by llama.cpp."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, r.fields["general.architecture"].contents())
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, f.contents(), vtype, sub_type=sub)
    for t in r.tensors:
        data = np.asarray(t.data)
        if t.name == "output.weight":
            rows = dequantize(data.copy(), t.tensor_type).reshape(-1, int(t.shape[0])).astype(np.float32)
            q = quantize_rows(lib, qtype, rows)
            w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=qtype)
        else:
            w.add_tensor(t.name, data, raw_shape=data.shape, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize_rows(lib, qtype, rows):
    """rows [n, cols] f32 -> [n, row bytes] blocks, one ggml_quantize_chunk call."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    elems, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    out = np.zeros((rows.shape[0], rows.shape[1] // elems * nbytes), dtype=np.uint8)
    n = lib.ggml_quantize_chunk(int(qtype.value), rows.ctypes.data, out.ctypes.data, 0, rows.shape[0],
                                rows.shape[1], None)
    if n != out.size:
        sys.exit(f"ggml_quantize_chunk wrote {n} bytes, expected {out.size}")
    return out


def llama_logits(path, ids):
    from llama_cpp import Llama
    llm = Llama(model_path=path, n_ctx=64, n_batch=64, logits_all=True, n_threads=2,
                type_k=0, type_v=0, flash_attn=False, verbose=False)  # f32 KV cache
    llm.eval(ids)
    return np.array(llm.scores[:len(ids)], dtype=np.float32)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.path.join(root, "tests/data/generated/head_type"))
    ap.add_argument("--models-dir", default=os.path.join(root, "models"))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rng = np.random.default_rng(SEED)
    cfg = make_config()
    f32 = os.path.join(args.out_dir, "model-f32.gguf")
    write_gguf(f32, "llama", cfg, make_state(cfg, rng))
    ids = [1] + [int(i) for i in rng.integers(3, 256, N_TOKENS - 1)]
    with open(os.path.join(args.out_dir, "ids.json"), "w") as f:
        json.dump(ids, f)
    lib = libggml()
    files = {"f32": f32}
    for name, qtype in HEAD_TYPES.items():
        files[name] = os.path.join(args.out_dir, f"model-{name}-head.gguf")
        with_quantized_head(f32, files[name], qtype, lib)
    for name, path in files.items():
        logits = llama_logits(path, ids)
        np.save(os.path.join(args.out_dir, f"logits-{name}.npy"), logits)
        top = np.sort(logits, axis=-1)
        print(f"{name}: logit spread {float(np.std(logits)):.2f}, mean top-2 gap "
              f"{float(np.mean(top[:, -1] - top[:, -2])):.3f}")
    qwen_q5_0(os.path.join(args.models_dir, QWEN), args.out_dir, lib, rng)
    print(f"wrote {len(files)} models to {args.out_dir}")


def qwen_q5_0(model, out_dir, lib, rng):
    """llama.cpp's logits on Qwen2.5-Coder-0.5B with its Q8_0 head requantized to Q5_0."""
    if not os.path.exists(model):
        sys.exit(f"missing model {model}: run scripts/fetch_models")
    ids = [int(i) for i in rng.integers(100, 30000, QWEN_TOKENS)]
    with open(os.path.join(out_dir, "qwen-ids.json"), "w") as f:
        json.dump(ids, f)
    tmp = os.path.join(out_dir, "qwen-q5_0-head.gguf.tmp")
    with_quantized_head(model, tmp, gguf.GGMLQuantizationType.Q5_0, lib)
    try:
        np.save(os.path.join(out_dir, "qwen-logits-q5_0.npy"), llama_logits(tmp, ids))
    finally:
        os.remove(tmp)


if __name__ == "__main__":
    main()
