#!/usr/bin/env python3
"""Rows quantized to Q4_K, Q5_K, Q4_0 and Q5_0 by llama.cpp's quantizer, the
oracle of the load-time head quantizers (kernels/quantize_k.h,
kernels/quantize_legacy.h) in tests/unit/kernels.

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/head_quant_rows.py \
      [--models-dir models] [--out tests/data/generated/head_quant/rows.json]

Rows: seeded random rows (Gaussian, and heavy-tailed Student-t with outliers),
and real output-head values: the first rows of the heads of the models in
models/ (SmolLM2-135M, Qwen2.5-Coder-0.5B, Gemma-3-270M), dequantized to f32
by the `gguf` package and cut into 1024-element rows (their own row lengths
are not whole 256-element super-blocks).
For each row and type: llama.cpp's blocks (ggml_quantize_chunk from the
libggml that llama-cpp-python ships, no importance matrix, as llama-quantize
without --imatrix) as hex, the `gguf` package's dequantization of them, and
their root-mean-square error to the row.
"""
import argparse
import ctypes
import glob
import json
import os
import sys

import numpy as np
import gguf
from gguf.quants import dequantize

ROW = 1024
HEADS = {  # model file -> rows of its head to take
    "SmolLM2-135M-Instruct.Q4_1.gguf": 16,
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf": 16,
    "gemma-3-270m-q4_k_m.gguf": 16,
}
TYPES = {"Q4_K": gguf.GGMLQuantizationType.Q4_K, "Q5_K": gguf.GGMLQuantizationType.Q5_K,
         "Q4_0": gguf.GGMLQuantizationType.Q4_0, "Q5_0": gguf.GGMLQuantizationType.Q5_0}


def libggml():
    import llama_cpp
    libdir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    paths = sorted(glob.glob(os.path.join(libdir, "libggml-base.so*")))
    if not paths:
        sys.exit(f"no libggml-base in {libdir}")
    lib = ctypes.CDLL(paths[0])
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    return lib


def llama_quantize_row(lib, qtype, row):
    row = np.ascontiguousarray(row, dtype=np.float32)
    elems, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    out = np.zeros(len(row) // elems * nbytes, dtype=np.uint8)
    n = lib.ggml_quantize_chunk(int(qtype.value), row.ctypes.data, out.ctypes.data, 0, 1, len(row), None)
    if n != len(out):
        sys.exit(f"ggml_quantize_chunk wrote {n} bytes, expected {len(out)}")
    return out


def head_rows(path, n_rows):
    r = gguf.GGUFReader(path)
    t = {t.name: t for t in r.tensors}
    head = t.get("output.weight") or t["token_embd.weight"]
    cols = int(head.shape[0])
    _, nbytes = gguf.GGML_QUANT_SIZES[head.tensor_type]
    elems = gguf.GGML_QUANT_SIZES[head.tensor_type][0]
    row_bytes = cols // elems * nbytes
    raw = np.asarray(head.data).reshape(-1).view(np.uint8)[:n_rows * row_bytes]
    vals = dequantize(raw.copy(), head.tensor_type).reshape(-1).astype(np.float32)
    return head.name, head.tensor_type.name, vals[:len(vals) // ROW * ROW].reshape(-1, ROW)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", default=os.path.join(root, "models"))
    ap.add_argument("--out", default=os.path.join(root, "tests/data/generated/head_quant/rows.json"))
    args = ap.parse_args()
    rng = np.random.default_rng(38)
    sources = [("random normal", rng.normal(0, 0.02, (8, ROW)).astype(np.float32))]
    heavy = rng.standard_t(3, (8, ROW)) * 0.01
    heavy[:, ::97] *= 8  # sparse outliers, as real weight rows have
    sources.append(("random student-t with outliers", heavy.astype(np.float32)))
    for model, n in HEADS.items():
        path = os.path.join(args.models_dir, model)
        if not os.path.exists(path):
            sys.exit(f"missing model {path}: run scripts/fetch_models")
        name, ftype, rows = head_rows(path, n)
        sources.append((f"{model} {name} ({ftype})", rows))

    lib = libggml()
    out = []
    for label, rows in sources:
        for i, row in enumerate(rows):
            entry = {"source": label, "index": i, "values": [float(v) for v in row], "llama": {}}
            for tname, qtype in TYPES.items():
                blocks = llama_quantize_row(lib, qtype, row)
                deq = dequantize(blocks.copy(), qtype).reshape(-1).astype(np.float32)
                rmse = float(np.sqrt(np.mean((deq.astype(np.float64) - row) ** 2)))
                entry["llama"][tname] = {"bytes_hex": blocks.tobytes().hex(),
                                         "dequantized": [float(v) for v in deq], "rmse": rmse}
            out.append(entry)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    import llama_cpp
    with open(args.out, "w") as f:
        json.dump({"generator": "scripts/oracles/head_quant_rows.py", "llama_cpp_python": llama_cpp.__version__,
                   "row": ROW, "rows": out}, f)
    print(f"wrote {len(out)} rows to {args.out}")


if __name__ == "__main__":
    main()
