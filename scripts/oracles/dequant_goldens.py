#!/usr/bin/env python3
"""Writes tests/data/dequant_goldens.json: the raw bytes of the first rows of one
tensor per weight type in the two real models, with the `gguf` package's
dequantization of them (first 64 floats and the row sum) as the oracle.

Run: ~/.cache/stride/venv/bin/python scripts/oracles/dequant_goldens.py
"""
import json
import os

import numpy as np
import gguf
from gguf.quants import dequantize

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = {
    "SmolLM2-135M-Instruct.Q4_1.gguf": ["blk.0.ffn_gate.weight", "token_embd.weight"],
    "gemma-3-270m-q4_k_m.gguf": [
        "blk.0.attn_q.weight",        # Q5_0
        "blk.0.attn_output.weight",   # Q4_K
        "blk.0.ffn_down.weight",      # Q6_K
        "blk.0.attn_v.weight",        # Q8_0
    ],
}
ROWS = [0, 1, 7]


# Types absent from the two models get random rows (fixed seed) whose fp16
# scale fields are overwritten with finite values.
SYNTHETIC = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16",
             "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS", "MXFP4"]
# Byte offsets of fp16 fields inside each block.
HALF_FIELDS = {"Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
               "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208], "Q2_K": [80, 82], "Q3_K": [108],
               "IQ4_NL": [0], "IQ4_XS": [0]}


def synthetic_rows():
    rng = np.random.default_rng(1234)
    rows = []
    for name in SYNTHETIC:
        qtype = gguf.GGMLQuantizationType[name]
        block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        n_cols = 512
        nb = n_cols // block_elems
        raw = rng.integers(0, 256, size=nb * block_bytes, dtype=np.uint8)
        blocks = raw.reshape(nb, block_bytes)
        for off in HALF_FIELDS.get(name, []):
            h = rng.uniform(-0.05, 0.05, size=nb).astype(np.float16)
            blocks[:, off:off + 2] = h.view(np.uint8).reshape(nb, 2)
        if name == "MXFP4":  # E8M0 exponents: the two subnormal ones, then any finite product
            blocks[:, 0] = rng.integers(0, 250, size=nb)
            blocks[:2, 0] = [0, 1]
        if name == "F16":
            raw = rng.normal(size=n_cols).astype(np.float16).view(np.uint8)
        if name == "BF16":
            f = rng.normal(size=n_cols).astype(np.float32)
            raw = (f.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
        raw = np.ascontiguousarray(raw.reshape(-1))
        vals = dequantize(raw.copy(), qtype).reshape(-1).astype(np.float64)
        assert vals.size == n_cols
        rows.append({
            "model": "", "tensor": "synthetic", "type": name, "type_id": int(qtype.value),
            "n_cols": n_cols, "row": 0, "file_offset": -1, "bytes_hex": raw.tobytes().hex(),
            "first64": [float(v) for v in vals[:64]], "sum": float(vals.sum()),
            "abs_sum": float(np.abs(vals).sum()),
        })
    return rows


def main():
    out = []
    for fname, names in MODELS.items():
        path = os.path.join(ROOT, "models", fname)
        reader = gguf.GGUFReader(path)
        by_name = {t.name: t for t in reader.tensors}
        for name in names:
            t = by_name[name]
            qtype = t.tensor_type
            block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
            n_cols = int(t.shape[0])
            row_bytes = n_cols // block_elems * block_bytes
            raw = np.asarray(t.data).reshape(-1).view(np.uint8)
            for r in ROWS:
                row = raw[r * row_bytes:(r + 1) * row_bytes]
                vals = dequantize(row.copy(), qtype).reshape(-1).astype(np.float64)
                assert vals.size == n_cols
                out.append({
                    "model": fname,
                    "tensor": name,
                    "type": qtype.name,
                    "type_id": int(qtype.value),
                    "n_cols": n_cols,
                    "row": r,
                    "file_offset": int(t.data_offset) + r * row_bytes,
                    "bytes_hex": row.tobytes().hex(),
                    "first64": [float(v) for v in vals[:64]],
                    "sum": float(vals.sum()),
                    "abs_sum": float(np.abs(vals).sum()),
                })
    out.extend(synthetic_rows())
    dst = os.path.join(ROOT, "tests", "data", "dequant_goldens.json")
    with open(dst, "w") as f:
        json.dump({"generator": "scripts/oracles/dequant_goldens.py", "rows": out}, f, indent=1)
    print(f"wrote {len(out)} rows to {dst}")


if __name__ == "__main__":
    main()
