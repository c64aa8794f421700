"""Proves the tiny GGUF files follow llama.cpp's conventions: llama.cpp itself
loads them and reproduces the HF logits. (This tests the oracle, not stride.)

Run: ~/.cache/stride/venv/bin/python -m pytest -q tests/python/test_tiny_gguf_llamacpp.py -s
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
         ("llama_linear", "f32", 1e-3), ("llama_yarn", "f32", 1e-3), ("llama_llama3", "f32", 1e-3)]


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
    n = tiny_manifest["models"][name]["sliding_window"] if name == "mistral" else len(ids)
    print(f"\nllama.cpp {name} {dtype}: max|diff| {per_pos[:n].max():.3e} over {n} positions")
    assert per_pos[:n].max() <= tol


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gemma3"])
def test_gguf_reader_metadata(tiny_manifest, name):
    """The files parse with gguf-py and carry the keys llama.cpp's converter writes."""
    import gguf
    path = os.path.join(TINY, tiny_manifest["models"][name]["gguf"]["f32"])
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    assert arch == {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "gemma3": "gemma3"}[name]
    for key in ("block_count", "embedding_length", "attention.head_count",
                "attention.head_count_kv", "rope.freq_base", "attention.key_length"):
        assert f"{arch}.{key}" in r.fields, key
    if tiny_manifest["models"][name]["sliding_window"]:
        assert r.fields[f"{arch}.attention.sliding_window"].contents() == 8
    names = {t.name for t in r.tensors}
    assert {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"} <= names
    assert ("output.weight" in names) == (name in ("llama", "mistral"))  # tied otherwise
    assert len(r.fields["tokenizer.ggml.tokens"].data) == 256
