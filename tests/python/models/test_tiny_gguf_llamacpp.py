"""Proves the tiny GGUF files follow llama.cpp's conventions: llama.cpp itself
loads them and reproduces the HF logits. (This tests the oracle, not stride.)

Run: ~/.cache/stride/venv/bin/python -m pytest -q tests/python/models/test_tiny_gguf_llamacpp.py -s
"""
import json
import os

import numpy as np
import pytest

from conftest import GEN

TINY = os.path.join(GEN, "tiny")
CASES = [("llama", "f32", 1e-3), ("llama", "f16", 3e-2), ("mistral", "f32", 1e-3),
         ("qwen2", "f32", 1e-3),
         # ggml evaluates GELU from an f16 lookup table: ~3e-3 off exact GELU.
         ("gemma3", "f32", 5e-3),
         ("qwen3", "f32", 1e-3),
         # RoPE scaling as llama.cpp reads it (96 tokens, past the original 64):
         # linear and yarn metadata, llama3's rope_freqs tensor. (llama.cpp's
         # llama arch has no LongRoPE factor tensors: Phi-3 carries those.)
         ("llama_linear", "f32", 1e-3), ("llama_yarn", "f32", 1e-3), ("llama_llama3", "f32", 1e-3),
         # head_dim 32 != 64 / 4; soft-caps and every other layer windowed;
         # fused qkv / gate_up with LongRoPE (n_ctx 128 > 64: llama.cpp takes
         # the long factors, as HF does for 96 tokens) and partial rotary.
         # (llama.cpp's phi3 vocabulary loader rejects the tiny byte-level
         # vocabulary our writer gives; it takes its own converter's.)
         ("mistral_nemo", "f32", 1e-3), ("gemma2", "f32", 5e-3), ("gemma2", "conv", 5e-3),
         ("phi3", "conv", 1e-3), ("phi3_window", "conv", 1e-3)]
# llama.cpp ignores these files' sliding_window (the llama arch has none,
# and llama.cpp turns Phi-3's off): only positions before the window edge compare.
WINDOW_IGNORED = {"mistral", "phi3_window"}


@pytest.mark.parametrize("name,dtype,tol", CASES)
def test_llamacpp_reproduces_hf(tiny_manifest, name, dtype, tol):
    from llama_cpp import Llama
    ids = json.load(open(os.path.join(TINY, name, "ids.json")))
    ref = np.load(os.path.join(TINY, name, "logits.npy"))
    path = os.path.join(TINY, tiny_manifest["models"][name]["gguf"][dtype])
    n_ctx = 64 if len(ids) <= 64 else 128
    llm = Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, logits_all=True, n_threads=2,
                type_k=0, type_v=0, flash_attn=False, verbose=False)  # f32 KV cache
    llm.eval(ids)
    got = np.array(llm.scores[:len(ids)])
    per_pos = np.abs(got - ref).max(axis=-1)
    # llama.cpp's "llama" arch (which Mistral converts to) ignores sliding_window,
    # so only positions before the window edge are comparable there.
    n = tiny_manifest["models"][name]["sliding_window"] if name in WINDOW_IGNORED else len(ids)
    print(f"\nllama.cpp {name} {dtype}: max|diff| {per_pos[:n].max():.3e} over {n} positions")
    assert per_pos[:n].max() <= tol


ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "gemma3": "gemma3",
        "mistral_nemo": "llama", "gemma2": "gemma2", "phi3": "phi3"}
UNTIED = {"llama", "mistral", "mistral_nemo", "phi3"}


@pytest.mark.parametrize("name", list(ARCH))
def test_gguf_reader_metadata(tiny_manifest, name):
    """The files parse with gguf-py and carry the keys llama.cpp's converter writes."""
    import gguf
    path = os.path.join(TINY, tiny_manifest["models"][name]["gguf"]["f32"])
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    assert arch == ARCH[name]
    for key in ("block_count", "embedding_length", "attention.head_count",
                "attention.head_count_kv", "rope.freq_base", "attention.key_length"):
        assert f"{arch}.{key}" in r.fields, key
    if tiny_manifest["models"][name]["sliding_window"]:
        assert r.fields[f"{arch}.attention.sliding_window"].contents() == 8
    names = {t.name for t in r.tensors}
    q = "blk.0.attn_qkv.weight" if arch == "phi3" else "blk.0.attn_q.weight"  # Phi-3: fused
    assert {"token_embd.weight", "output_norm.weight", q} <= names
    assert ("output.weight" in names) == (name in UNTIED)  # tied otherwise
    assert len(r.fields["tokenizer.ggml.tokens"].data) == 256
