#!/usr/bin/env python3
"""Random-weight GGUFs with the exact tensor shapes and llama.cpp quant mixes of real models.

Usage:
  ~/.cache/stride/venv/bin/python bench/make_shaped_gguf.py [--preset P ...] [--all]
      [--out-dir ~/.cache/stride/shaped] [--seed 0] [--force] [--list]
Library: path = ensure(preset)   # generate unless the file exists with this generator version

Presets (the real models' hyper-parameters; weights are random):
  llama3.2-1b-q4_k_m   llama, 2048 x 16 layers, 32/8 heads, ffn 8192, vocab 128256, tied
  qwen2.5-1.5b-q4_k_m  qwen2, 1536 x 28 layers, 12/2 heads, ffn 8960, vocab 151936, qkv bias, tied
  llama3.1-8b-q4_0     llama, 4096 x 32 layers, 32/8 heads, ffn 14336, vocab 128256, untied
  qwen2.5-1.5b-q8_0    the Qwen2.5-1.5B shape above, every 2-D weight Q8_0
  llama3.2-1b-bf16     the Llama-3.2-1B shape above, every 2-D weight BF16 (N(0, 0.02) values)
  llama3.2-1b-f16      the same with F16 weights
Quant mixes follow llama.cpp's llama_tensor_get_type (src/llama-quant.cpp):
  Q4_K_M: output.weight (token_embd.weight when tied) Q6_K; attn_v and ffn_down Q6_K on
          layers where use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2,
          else Q4_K; every other 2-D weight Q4_K.
  Q4_0:   output.weight Q6_K; every other 2-D weight Q4_0 (token_embd too when untied).
  Q8_0:   every 2-D weight Q8_0 (llama.cpp keeps Q8_0 for the output as well).
  BF16, F16: every 2-D weight BF16 (F16).
  Norms and biases are F32. The Llama-3 rope_freqs.weight tensor (64 floats of long-context
  RoPE factors) is not written: stride has no Llama-3 RoPE scaling, and it costs no bandwidth.
Quant payloads are random bytes except the fp16 scales (Q4_K d/dmin, Q6_K d, Q4_0/Q8_0 d),
which are uniform in [1e-4, 2e-3] so that activations stay finite; norm weights ~1.
Tokenizer: a synthetic SentencePiece ("llama") vocabulary of exactly n_vocab pieces:
<unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then "▁w<i>" with descending scores.
Tensors are written one at a time (peak memory: the largest tensor, ~0.4 GB for 8B).
Output: OUT_DIR/<preset>.gguf; the generator version is recorded in the file's second
metadata key and an existing file with the same version is kept.
"""
import argparse
import os
import struct
import sys
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as QT

GENERATOR = "stride-shaped-gguf/1"
VERSION_KEY = "stride.shaped.generator"
DEFAULT_OUT = Path(os.environ.get("STRIDE_CACHE", Path.home() / ".cache" / "stride")) / "shaped"

PRESETS = {
    "llama3.2-1b-q4_k_m": dict(arch="llama", n_embd=2048, n_layer=16, n_head=32, n_head_kv=8,
                               head_dim=64, n_ff=8192, n_vocab=128256, rope_base=500000.0,
                               eps=1e-5, tied=True, ctx=131072, bias=False, mix="q4_k_m"),
    "qwen2.5-1.5b-q4_k_m": dict(arch="qwen2", n_embd=1536, n_layer=28, n_head=12, n_head_kv=2,
                                head_dim=128, n_ff=8960, n_vocab=151936, rope_base=1000000.0,
                                eps=1e-6, tied=True, ctx=32768, bias=True, mix="q4_k_m"),
    "llama3.1-8b-q4_0": dict(arch="llama", n_embd=4096, n_layer=32, n_head=32, n_head_kv=8,
                             head_dim=128, n_ff=14336, n_vocab=128256, rope_base=500000.0,
                             eps=1e-5, tied=False, ctx=131072, bias=False, mix="q4_0"),
    "qwen2.5-1.5b-q8_0": dict(arch="qwen2", n_embd=1536, n_layer=28, n_head=12, n_head_kv=2,
                              head_dim=128, n_ff=8960, n_vocab=151936, rope_base=1000000.0,
                              eps=1e-6, tied=True, ctx=32768, bias=True, mix="q8_0"),
    # Float weights (the float matmul: FMA tiles, or AMX-BF16 tiles on the amx path).
    "llama3.2-1b-bf16": dict(arch="llama", n_embd=2048, n_layer=16, n_head=32, n_head_kv=8,
                             head_dim=64, n_ff=8192, n_vocab=128256, rope_base=500000.0,
                             eps=1e-5, tied=True, ctx=131072, bias=False, mix="bf16"),
    "llama3.2-1b-f16": dict(arch="llama", n_embd=2048, n_layer=16, n_head=32, n_head_kv=8,
                            head_dim=64, n_ff=8192, n_vocab=128256, rope_base=500000.0,
                            eps=1e-5, tied=True, ctx=131072, bias=False, mix="f16"),
}
FILE_TYPE = {"q4_k_m": gguf.LlamaFileType.MOSTLY_Q4_K_M, "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
             "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "bf16": gguf.LlamaFileType.MOSTLY_BF16,
             "f16": gguf.LlamaFileType.MOSTLY_F16}


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def weight_type(mix, role, layer, n_layer, tied):
    """llama.cpp's type for a 2-D weight of `role` ("output", "token_embd", "attn_v", ...)."""
    if mix == "q8_0":  # llama.cpp keeps Q8_0 for the output and the embedding too
        return QT.Q8_0
    if mix == "bf16":  # every 2-D weight, as convert_hf_to_gguf --outtype bf16 writes them
        return QT.BF16
    if mix == "f16":
        return QT.F16
    if role == "output" or (role == "token_embd" and tied):
        return QT.Q6_K
    if mix == "q4_0":
        return QT.Q4_0
    if role in ("attn_v", "ffn_down") and use_more_bits(layer, n_layer):
        return QT.Q6_K
    return QT.Q4_K


def plan(preset):
    """[(name, numpy shape (rows, cols) or (n,), GGML type)] in file order."""
    p = PRESETS[preset]
    E, F, V, L = p["n_embd"], p["n_ff"], p["n_vocab"], p["n_layer"]
    q_dim, kv_dim = p["n_head"] * p["head_dim"], p["n_head_kv"] * p["head_dim"]
    mix, tied = p["mix"], p["tied"]
    out = [("token_embd.weight", (V, E), weight_type(mix, "token_embd", 0, L, tied))]
    for i in range(L):
        b = f"blk.{i}."
        out.append((b + "attn_norm.weight", (E,), QT.F32))
        for role, rows in (("attn_q", q_dim), ("attn_k", kv_dim), ("attn_v", kv_dim)):
            out.append((b + role + ".weight", (rows, E), weight_type(mix, role, i, L, tied)))
            if p["bias"]:
                out.append((b + role + ".bias", (rows,), QT.F32))
        out.append((b + "attn_output.weight", (E, q_dim), weight_type(mix, "attn_output", i, L, tied)))
        out.append((b + "ffn_norm.weight", (E,), QT.F32))
        out.append((b + "ffn_gate.weight", (F, E), weight_type(mix, "ffn_gate", i, L, tied)))
        out.append((b + "ffn_up.weight", (F, E), weight_type(mix, "ffn_up", i, L, tied)))
        out.append((b + "ffn_down.weight", (E, F), weight_type(mix, "ffn_down", i, L, tied)))
    out.append(("output_norm.weight", (E,), QT.F32))
    if not tied:
        out.append(("output.weight", (V, E), weight_type(mix, "output", 0, L, tied)))
    return out


def tensor_nbytes(shape, qtype):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = int(np.prod(shape))
    return n // block * size


def bytes_per_token(preset):
    """Weight bytes a decode step reads: every tensor, less the embedding when untied
    (only one row of it is gathered per token)."""
    p = PRESETS[preset]
    return sum(tensor_nbytes(s, t) for name, s, t in plan(preset)
               if p["tied"] or name != "token_embd.weight")


def _f16_scales(rng, n):
    return rng.uniform(1e-4, 2e-3, n).astype("<f2").view(np.uint8).reshape(n, 2)


def random_tensor(rng, name, shape, qtype):
    if qtype == QT.F32:
        if name.endswith(".bias"):
            return rng.normal(0.0, 0.02, shape).astype(np.float32)
        return (1.0 + rng.normal(0.0, 0.02, shape)).astype(np.float32)  # norm weights ~1
    rows, cols = shape
    if qtype == QT.BF16:  # finite values of a trained layer's scale: the top half of f32 normals
        f32 = rng.normal(0.0, 0.02, shape).astype(np.float32)
        return (f32.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(rows, cols * 2)
    if qtype == QT.F16:
        return rng.normal(0.0, 0.02, shape).astype("<f2").view(np.uint8).reshape(rows, cols * 2)
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    nb = rows * cols // block
    buf = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
    if qtype == QT.Q4_K:  # d, dmin at bytes 0..3 of the 144-byte block
        buf[:, 0:2] = _f16_scales(rng, nb)
        buf[:, 2:4] = _f16_scales(rng, nb)
    elif qtype == QT.Q6_K:  # d at the last 2 bytes of the 210-byte block
        buf[:, 208:210] = _f16_scales(rng, nb)
    elif qtype in (QT.Q4_0, QT.Q8_0):  # d at bytes 0..1 of the 18- or 34-byte block
        buf[:, 0:2] = _f16_scales(rng, nb)
    else:
        raise ValueError(f"no scale layout for {qtype.name}")
    return buf.reshape(rows, cols // block * size)


def vocab(n_vocab):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [int(gguf.TokenType.UNKNOWN), int(gguf.TokenType.CONTROL), int(gguf.TokenType.CONTROL)]
    types += [int(gguf.TokenType.BYTE)] * 256
    n_words = n_vocab - len(tokens)
    tokens += [f"\u2581w{i}" for i in range(n_words)]
    types += [int(gguf.TokenType.NORMAL)] * n_words
    scores = [0.0] * 259 + [-float(i) for i in range(n_words)]
    return tokens, scores, types


def existing_generator(path):
    """The generator version recorded in PATH (the second metadata key), or None."""
    try:
        with open(path, "rb") as f:
            magic, _ver, _nt, n_kv = struct.unpack("<4sIQQ", f.read(24))
            if magic != b"GGUF":
                return None
            for _ in range(min(n_kv, 2)):
                (klen,) = struct.unpack("<Q", f.read(8))
                key = f.read(klen).decode("utf-8", "replace")
                (vtype,) = struct.unpack("<I", f.read(4))
                if vtype != int(gguf.GGUFValueType.STRING):
                    return None
                (vlen,) = struct.unpack("<Q", f.read(8))
                val = f.read(vlen).decode("utf-8", "replace")
                if key == VERSION_KEY:
                    return val
    except (OSError, struct.error):
        return None
    return None


def generator_tag(preset, seed):
    return f"{GENERATOR} preset={preset} seed={seed}"


def write(preset, path, seed=0):
    p = PRESETS[preset]
    a = p["arch"]
    rng = np.random.default_rng(seed)
    tmp = Path(str(path) + ".tmp")
    w = gguf.GGUFWriter(tmp, a)
    w.add_string(VERSION_KEY, generator_tag(preset, seed))
    w.add_name(f"shaped-{preset}")
    w.add_file_type(int(FILE_TYPE[p["mix"]]))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_context_length(p["ctx"])
    w.add_embedding_length(p["n_embd"])
    w.add_block_count(p["n_layer"])
    w.add_feed_forward_length(p["n_ff"])
    w.add_head_count(p["n_head"])
    w.add_head_count_kv(p["n_head_kv"])
    w.add_rope_freq_base(p["rope_base"])
    w.add_layer_norm_rms_eps(p["eps"])
    w.add_key_length(p["head_dim"])
    w.add_value_length(p["head_dim"])
    if a == "llama":
        w.add_rope_dimension_count(p["head_dim"])
        w.add_vocab_size(p["n_vocab"])
    tokens, scores, types = vocab(p["n_vocab"])
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    tensors = plan(preset)
    for name, shape, qtype in tensors:
        if qtype == QT.F32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4)
        else:
            byte_shape = gguf.quant_shape_to_byte_shape(shape, qtype)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), tensor_nbytes(shape, qtype),
                              raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape, qtype in tensors:
        w.write_tensor_data(random_tensor(rng, name, shape, qtype))
    w.close()
    os.replace(tmp, path)


def ensure(preset, out_dir=None, seed=0, force=False, quiet=False):
    """Path of PRESET's GGUF, written unless it exists with this generator version and seed."""
    if preset not in PRESETS:
        raise SystemExit(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    out_dir = Path(out_dir or DEFAULT_OUT).expanduser()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{preset}.gguf"
    if not force and path.exists() and existing_generator(path) == generator_tag(preset, seed):
        if not quiet:
            print(f"{path} {path.stat().st_size / 1e9:.2f} GB (up to date)", flush=True)
        return path
    if not quiet:
        print(f"writing {path} ...", flush=True)
    write(preset, path, seed)
    if not quiet:
        print(f"{path} {path.stat().st_size / 1e9:.2f} GB", flush=True)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", action="append", choices=list(PRESETS), help="repeatable")
    ap.add_argument("--all", action="store_true", help="every preset")
    ap.add_argument("--out-dir", default=str(DEFAULT_OUT))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="rewrite even when up to date")
    ap.add_argument("--list", action="store_true", help="print each preset's tensor types and sizes")
    a = ap.parse_args()
    presets = list(PRESETS) if a.all else (a.preset or [])
    if a.list:
        for pr in presets or PRESETS:
            counts = {}
            for _name, shape, qt in plan(pr):
                c = counts.setdefault(qt.name, [0, 0])
                c[0] += 1
                c[1] += tensor_nbytes(shape, qt)
            desc = ", ".join(f"{k} x{n} {b / 1e6:.0f} MB" for k, (n, b) in counts.items())
            print(f"{pr}: {desc}; {bytes_per_token(pr) / 1e6:.0f} MB read per token")
        return
    if not presets:
        ap.error("give --preset P (repeatable), --all or --list")
    for pr in presets:
        ensure(pr, a.out_dir, a.seed, a.force)


if __name__ == "__main__":
    sys.exit(main())
