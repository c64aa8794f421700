#!/usr/bin/env python3
"""Writes tests/data/tokenizer_goldens.json: token ids (and token pieces) that
llama.cpp (through llama-cpp-python, vocab only) produces for a varied corpus
on the real models. tests/unit/tokenizer/golden_test.cpp asserts that stride's
tokenizer reproduces every entry.

Usage: ~/.cache/stride/venv/bin/python scripts/oracles/tokenizer_goldens.py
"""
import ctypes
import json
import os
import sys

import llama_cpp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = {
    "smollm2": "models/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "models/gemma-3-270m-q4_k_m.gguf",
}

CORPUS = [
    "",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n\n",
    " \n \n",
    "Hello world",
    " Hello world",
    "Hello, world! How are you doing today?",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've done it, haven't they? He'd've known. It's OK'S",
    "numbers: 1234567 3.14159 -42 1,000,000 0x1F 2024-05-17",
    "1 12 123 1234 12345",
    "   leading and trailing spaces   ",
    "multiple     spaces\t\ttabs\n\nnewlines\r\nwindows",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot",
    "<html><body><h1>Title</h1><p>Para &amp; more</p></body></html>",
    "unicode: café naïve résumé Ångström façade",
    "Привет, как дела? Ελληνικά γράμματα",
    "中文测试：你好，世界！日本語のテキスト、カタカナ。한국어 텍스트",
    "emoji 🚀🔥 👨‍👩‍👧‍👦 ❤️ 🇫🇷 and 😀😃😄",
    "math ∑∫√∞ ≠ ≤ ≥ ± × ÷ → ⇒ ∀∃",
    "mixed: abc123def 456ghi_jkl-mno.pqr",
    "!!!???...,,,;;;:::'''\"\"\"```",
    "a'b 'quoted' \"double\" `tick`",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>",
    "text<|endoftext|>more text",
    "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n",
    "<bos>hello<eos>",
    "</s> and <s> and <unk>",
    "<0x41> literal byte token text",
    "\u00a0non-breaking\u2009thin\u3000ideographic space",
    "zero\u200bwidth\ufeffbom",
    "a\u0301 combining e\u0300 accents",
    "Tab\tseparated\tvalues\n1\t2\t3",
    "   \n\t  \n",
    "ALL CAPS SHOUTING AND CamelCaseWords and snake_case_words",
    "https://example.com/path?query=1&other=two#frag user@example.org",
    "x" * 40,
    "ab" * 30 + " " + "9" * 25,
]

# Strings tokenized with parse_special=False (special-token text stays text).
NO_SPECIAL = [
    "<|im_start|>user\nhello<|im_end|>",
    "<start_of_turn>user\nhi<end_of_turn>",
    "<|endoftext|>",
]


def piece(vocab, tok, special):
    buf = ctypes.create_string_buffer(512)
    n = llama_cpp.llama_token_to_piece(vocab, tok, buf, 512, 0, special)
    assert 0 <= n <= 512
    return buf.raw[:n].hex()


def model_goldens(path):
    llm = llama_cpp.Llama(model_path=os.path.join(ROOT, path), vocab_only=True, verbose=False)
    vocab = llm._model.vocab
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    cases = []
    for text in CORPUS:
        cases.append({"text": text, "add_bos": False, "parse_special": True,
                      "ids": llm.tokenize(text.encode(), add_bos=False, special=True)})
    for text in CORPUS[7:10]:
        cases.append({"text": text, "add_bos": True, "parse_special": True,
                      "ids": llm.tokenize(text.encode(), add_bos=True, special=True)})
    for text in NO_SPECIAL:
        cases.append({"text": text, "add_bos": False, "parse_special": False,
                      "ids": llm.tokenize(text.encode(), add_bos=False, special=False)})

    ids = set()
    for c in cases:
        ids.update(c["ids"])
    ids.update(range(min(n_vocab, 300)))  # control, byte and low ids
    pieces = {str(t): piece(vocab, t, False) for t in sorted(ids)}
    pieces_special = {str(t): piece(vocab, t, True) for t in sorted(ids)}
    eog = [t for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)]
    return {
        "path": path,
        "n_vocab": n_vocab,
        "bos": llama_cpp.llama_vocab_bos(vocab),
        "eos": llama_cpp.llama_vocab_eos(vocab),
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        "eog": eog,
        "cases": cases,
        "pieces": pieces,
        "pieces_special": pieces_special,
    }


def main():
    out = {"generator": "scripts/oracles/tokenizer_goldens.py",
           "llama_cpp_python": llama_cpp.__version__,
           "models": {name: model_goldens(path) for name, path in MODELS.items()}}
    dst = os.path.join(ROOT, "tests", "data", "tokenizer_goldens.json")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=1)
    print(f"wrote {dst}", file=sys.stderr)


if __name__ == "__main__":
    main()
