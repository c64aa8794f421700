"""HF folders tokenize with their tokenizer.json: `stride tokenize` on folders
that transformers wrote from GGUF vocabularies (scripts/oracles/tokenizer_json_goldens.py)
gives Hugging Face tokenizers' ids, and `stride run` on a tiny HF model folder
with a tokenizer.json generates what transformers generates from the same
text prompt.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/models/test_hf_folder_tokenizer.py
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


CHAT_TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] | trim }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<assistant>{% endif %}")


def test_serve_chat_on_hf_folder_uses_its_template(tmp_path):
    """`stride serve` on an HF folder renders tokenizer_config.json's
    chat_template: the prompt it counts is the Jinja2 rendering, tokenized by
    the folder's tokenizer.json (both computed here with jinja2 and tokenizers)."""
    import jinja2
    from stride_server import StrideServer
    folder = tmp_path / "model"
    folder.mkdir()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(TINY, f), folder / f)
    tok = _byte_level_tokenizer(folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}))
    messages = [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi there"}]
    rendered = jinja2.Environment().from_string(CHAT_TEMPLATE).render(messages=messages,
                                                                     add_generation_prompt=True)
    want_tokens = len(tok.encode(rendered).ids)
    with StrideServer(model=str(folder)) as srv:
        status, _, body = srv.post("/v1/chat/completions", {"model": srv.model_name, "messages": messages, "max_tokens": 4,
                                                            "temperature": 0})
        assert status == 200, body
        usage = json.loads(body)["usage"]
        assert usage["prompt_tokens"] == want_tokens
        assert usage["completion_tokens"] >= 1
