#!/usr/bin/env python3
"""SmolLM2 in the low-bit GGUF types (Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4) with
their oracles, for tests/python/models/test_quant_types.py and the dequantization
unit test.

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/quant_type_models.py \
      [--models-dir models] [--out-dir tests/data/generated/quant_types]

Writes into --out-dir:
  smollm2-<variant>.gguf  llama.cpp's quantizer (llama-cpp-python's
      llama_model_quantize, --allow-requantize from the Q4_1 file) for q2_k,
      q3_k_s, iq4_nl and iq4_xs (q2_k as a pure Q2_K); llama.cpp keeps the tensors whose rows (576)
      are not whole 256-element super-blocks in IQ4_NL. mxfp4: every 2-D
      weight dequantized and requantized by the `gguf` package's MXFP4
      quantizer (llama.cpp's quantizer applies MXFP4 to MoE experts only).
  rows.json  the raw bytes of rows 0, 1 and 7 of the first tensor of each
      type in each file, with gguf.quants.dequantize of them (every value).
  logits.json  llama.cpp's greedy continuations and teacher-forced top-K
      log-probs for two prompts per file (as llamacpp_goldens.py).
"""
import argparse
import ctypes
import json
import os
import sys

import numpy as np
import gguf
from gguf.quants import dequantize, quantize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamacpp_goldens as lg  # noqa: E402

SOURCE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# file suffix -> (llama_ftype name, pure). Pure Q2_K: the Q2_K mixture would
# move every Q2_K-eligible tensor of this small model to Q3_K.
LLAMA_VARIANTS = {
    "q2_k": ("LLAMA_FTYPE_MOSTLY_Q2_K", True),
    "q3_k_s": ("LLAMA_FTYPE_MOSTLY_Q3_K_S", False),
    "iq4_nl": ("LLAMA_FTYPE_MOSTLY_IQ4_NL", False),
    "iq4_xs": ("LLAMA_FTYPE_MOSTLY_IQ4_XS", False),
}
TYPES = ["Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS", "MXFP4"]
ROWS = [0, 1, 7]
PROMPTS = ["capital", "sky"]
N_GEN = 32


def _drop_log(level, text, user_data):
    pass


_QUIET_LOG = None


def llama_quantize(src: str, dst: str, ftype_name: str, pure: bool):
    import llama_cpp
    # llama.cpp logs every tensor it converts; a failure shows in the return code.
    global _QUIET_LOG
    if _QUIET_LOG is None:  # kept alive: llama.cpp holds the pointer
        _QUIET_LOG = llama_cpp.llama_log_callback(_drop_log)
    llama_cpp.llama_log_set(_QUIET_LOG, ctypes.c_void_p(0))
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, ftype_name)
    params.allow_requantize = True
    params.pure = pure
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), params)
    if rc != 0:
        sys.exit(f"llama_model_quantize {ftype_name} failed ({rc})")


def write_mxfp4(src: str, dst: str):
    """A copy of src whose 2-D weights are MXFP4 (norms and 1-D tensors kept)."""
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name == "general.file_type":
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, f.contents(), vtype, sub_type=sub)
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape)]  # numpy order: [rows, cols]
        if len(shape) == 2 and shape[1] % 32 == 0:
            f32 = dequantize(np.asarray(t.data), t.tensor_type).reshape(shape).astype(np.float32)
            q = quantize(f32, gguf.GGMLQuantizationType.MXFP4)
            w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.MXFP4)
        else:
            w.add_tensor(t.name, np.asarray(t.data), raw_shape=np.asarray(t.data).shape,
                         raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def golden_rows(path: str):
    r = gguf.GGUFReader(path)
    out, seen = [], set()
    for t in r.tensors:
        name = t.tensor_type.name
        if name not in TYPES or name in seen or len(t.shape) != 2:
            continue
        seen.add(name)
        block_elems, block_bytes = gguf.GGML_QUANT_SIZES[t.tensor_type]
        n_cols = int(t.shape[0])
        row_bytes = n_cols // block_elems * block_bytes
        raw = np.asarray(t.data).reshape(-1).view(np.uint8)
        for row in ROWS:
            b = raw[row * row_bytes:(row + 1) * row_bytes]
            vals = dequantize(b.copy(), t.tensor_type).reshape(-1).astype(np.float32)
            out.append({"model": os.path.basename(path), "tensor": t.name, "type": name,
                        "type_id": int(t.tensor_type.value), "n_cols": n_cols, "row": row,
                        "file_offset": int(t.data_offset) + row * row_bytes,
                        "bytes_hex": b.tobytes().hex(), "values": [float(v) for v in vals]})
    return out, sorted(seen)


def llama_logits(path: str):
    lg.N_GEN = N_GEN
    llm = lg.load_llama(path, n_ctx=512)
    llm_all = lg.load_llama(path, n_ctx=256, logits_all=True)
    cases = []
    for name in PROMPTS:
        text = lg.MODELS["smollm2"]["prompts"][name]
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        gen, _, _ = lg.greedy(llm, ids)
        tf_ids, tf_lp = lg.teacher_forced(llm_all, ids, gen)
        cases.append({"name": name, "prompt_ids": ids, "generated_ids": gen,
                      "tf_topk_ids": tf_ids, "tf_topk_logprobs": tf_lp})
        print(f"{os.path.basename(path)}/{name}: "
              f"{llm.detokenize(gen[:12]).decode('utf-8', 'replace')!r}...")
    return cases


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", default=os.path.join(root, "models"))
    ap.add_argument("--out-dir", default=os.path.join(root, "tests/data/generated/quant_types"))
    args = ap.parse_args()
    src = os.path.join(args.models_dir, SOURCE)
    if not os.path.exists(src):
        sys.exit(f"missing model {src}: run scripts/fetch_models")
    os.makedirs(args.out_dir, exist_ok=True)

    files = {}
    for variant, (ftype, pure) in LLAMA_VARIANTS.items():
        files[variant] = os.path.join(args.out_dir, f"smollm2-{variant}.gguf")
        llama_quantize(src, files[variant], ftype, pure)
    files["mxfp4"] = os.path.join(args.out_dir, "smollm2-mxfp4.gguf")
    write_mxfp4(src, files["mxfp4"])

    rows, models = [], {}
    for variant, path in files.items():
        r, types = golden_rows(path)
        rows += r
        models[variant] = {"file": os.path.basename(path), "types": types,
                           "cases": llama_logits(path)}
        print(f"{variant}: types {types}")
    missing = set(TYPES) - {r["type"] for r in rows}
    if missing:
        sys.exit(f"no tensor of type {sorted(missing)} was produced")

    import llama_cpp
    with open(os.path.join(args.out_dir, "rows.json"), "w") as f:
        json.dump({"generator": "scripts/oracles/quant_type_models.py", "rows": rows}, f)
    with open(os.path.join(args.out_dir, "logits.json"), "w") as f:
        json.dump({"llama_cpp_python": llama_cpp.__version__, "top_k": lg.TOP_K,
                   "models": models}, f)
    print(f"wrote {len(files)} models, {len(rows)} rows to {args.out_dir}")


if __name__ == "__main__":
    main()
