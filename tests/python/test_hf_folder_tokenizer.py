"""HF folders tokenize with their tokenizer.json: `stride tokenize` on folders
that transformers wrote from GGUF vocabularies (scripts/oracles/tokenizer_json_goldens.py)
gives Hugging Face tokenizers' ids, and `stride run` on a tiny HF model folder
with a tokenizer.json generates what transformers generates from the same
text prompt.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/test_hf_folder_tokenizer.py
"""
import json
import os
import shutil
import subprocess

import pytest

from conftest import GEN

TOKJSON = os.path.join(GEN, "tokenizer_json")
TINY = os.path.join(GEN, "tiny", "llama")
TEXT = "Hello world! <s> 12345 café\n  naïve 你好 🚀</s>"


@pytest.mark.parametrize("name", ["qwen2", "llama-spm", "phi-3", "SmolLM2-135M-Instruct.Q4_1"])
def test_stride_tokenize_matches_tokenizers(stride, name, tmp_path):
    from tokenizers import Tokenizer
    folder = os.path.join(TOKJSON, name)
    assert os.path.isfile(os.path.join(folder, "tokenizer.json")), f"{folder} missing: run scripts/setup"
    want = Tokenizer.from_file(os.path.join(folder, "tokenizer.json")).encode(TEXT, add_special_tokens=False).ids
    text_file = tmp_path / "text.txt"
    text_file.write_bytes(TEXT.encode("utf-8"))
    got = [int(t) for t in stride._call(["tokenize", "--model", folder, "--file", text_file]).split()]
    assert got == want


def _byte_level_tokenizer(path):
    """A byte-level BPE over exactly the 256 byte symbols (the tiny models' vocabulary)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(path))
    return tok


def test_stride_run_on_hf_folder_matches_transformers(stride, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM
    assert os.path.isfile(os.path.join(TINY, "config.json")), f"{TINY} missing: run scripts/setup"
    folder = tmp_path / "model"
    folder.mkdir()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(TINY, f), folder / f)
    tok = _byte_level_tokenizer(folder / "tokenizer.json")
    prompt = "Hello world, tokenizer.json!"
    ids = tok.encode(prompt).ids
    n = 8
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    seq = list(ids)
    with torch.no_grad():  # greedy, recomputing the whole sequence each step
        for _ in range(n):
            seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    want = seq[len(ids):]
    res = stride._last_json(stride._call(["run", "--model", folder, "--prompt", prompt, "--max-tokens", n,
                                          "--temperature", 0, "--ignore-eos", "--kv-type", "f32", "--json"]))
    assert res["prompt_tokens"] == len(ids)
    assert res["generated_ids"] == want
