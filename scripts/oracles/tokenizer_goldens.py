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
import random
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


def random_soup(seed, count):
    """Deterministic mixes of ASCII, Latin, Cyrillic, CJK, emoji, odd spaces and
    special-token texts: the places where pre-tokenizers disagree."""
    rng = random.Random(seed)
    cps = (list(range(0x20, 0x7F)) + list(range(0xA0, 0x250)) + list(range(0x400, 0x450)) +
           list(range(0x4E00, 0x4E40)) + [0x1F600, 0x1F680, 0x200B, 0x3000, 0x2028, 0x85, 0x180E])
    alphabet = [chr(c) for c in cps] + ["\n", "\t", "\r\n", "  ", "<|im_start|>", "<end_of_turn>",
                                        "<s>", "</s>", "'s", "'LL", "1234567"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))) for _ in range(count)]


CORPUS += random_soup(1234, 12)

# Strings tokenized with parse_special=False (special-token text stays text).
NO_SPECIAL = [
    "<|im_start|>user\nhello<|im_end|>",
    "<start_of_turn>user\nhi<end_of_turn>",
    "<|endoftext|>",
]


# Raw byte strings (invalid UTF-8, surrogates, truncated characters), stored as hex.
BYTE_CASES = [
    b"\xed\xa0\x88abc \xed\xbf\xbf!",
    b"\xf0\x9f\x9a",
    b"a\xc0\x80b \xe0\x80\x80",
    b"\xff\xfe\x80 x\xc3",
    b"\xe7\xfc5%{\xbdA*\xd3\xf1\xf1\xc1F\xd8\xfe_\xed\x930Q\xa8\xbery~\xe4\xc8",
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

    for raw in BYTE_CASES:
        cases.append({"text_hex": raw.hex(), "add_bos": False, "parse_special": True,
                      "ids": llm.tokenize(raw, add_bos=False, special=True)})

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
