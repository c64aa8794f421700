#!/usr/bin/env python3
"""Writes the WordPiece goldens: the ids that Hugging Face tokenizers (the
fast tokenizer sentence-transformers loads) gives all-MiniLM-L6-v2's
tokenizer.json for a varied corpus, with [CLS]/[SEP] and no truncation or
padding. tests/unit/tokenizer/wordpiece_test.cpp asserts that stride's
WordPiece tokenizer reproduces every entry.

Usage: ~/.cache/stride/venv/bin/python scripts/oracles/wordpiece_goldens.py \
           --tokenizer models/all-MiniLM-L6-v2/tokenizer.json --out tests/data/generated/wordpiece_goldens.json
"""
import argparse
import json
import random

from tokenizers import Tokenizer

CORPUS = [
    "",
    " ",
    "\t\n\r",
    "Hello world",
    "Hello, world! How are you doing today?",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've done it, haven't they?",
    "numbers: 1234567 3.14159 -42 1,000,000 0x1F 2024-05-17",
    "   leading and trailing spaces   ",
    "multiple     spaces\t\ttabs\n\nnewlines\r\nwindows",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "<html><body><h1>Title</h1><p>Para &amp; more</p></body></html>",
    "unicode: café naïve résumé Ångström façade",
    "CAFÉ NAÏVE Résumé ÅNGSTRÖM",
    "Привет, как дела? Ελληνικά γράμματα",
    "中文测试：你好，世界！日本語のテキスト、カタカナ。한국어 텍스트",
    "emoji 🚀🔥 👨‍👩‍👧‍👦 ❤️ 🇫🇷 and 😀😃😄",
    "math ∑∫√∞ ≠ ≤ ≥ ± × ÷ → ⇒ ∀∃",
    "mixed: abc123def 456ghi_jkl-mno.pqr",
    "!!!???...,,,;;;:::'''\"\"\"```$$$+++<<<===>>>^^^|||~~~",
    "a'b 'quoted' \"double\" `tick` «guillemets» „low“ ‘single’",
    "[CLS] [SEP] [MASK] [PAD] [UNK] stay text",
    "\u00a0non-breaking\u2009thin\u3000ideographic space\u2028line\u2029para",
    "zero\u200bwidth\ufeffbom\u200dzwj soft\u00adhyphen",
    "a\u0301 combining e\u0300 accents o\u0308",
    "control\x00nul\x01soh\x07bel\x1bescape\x7fdel\x85nel",
    "private \ue000 use \U000f0000 and unassigned \u0378",
    "İstanbul ıi ǅ ǈ ß ẞ ﬁ ﬀ Ωmega µ",
    "Ǆemal ῼ ᾈ ﬆ ŉ",
    "tiếng Việt có dấu: Nguyễn Thị Minh Khai",
    "العربية والفارسية: مرحبا بالعالم",
    "עברית: שלום עולם",
    "हिन्दी: नमस्ते दुनिया",
    "ไทย: สวัสดีชาวโลก",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x" * 99,
    "y" * 100,
    "z" * 101,
    "pneumonoultramicroscopicsilicovolcanoconiosis " * 3,
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝 𝒔𝒄𝒓𝒊𝒑𝒕 ｆｕｌｌｗｉｄｔｈ",
    "𠀀𠀁 CJK extension B 𪜀 and compatibility 豈更",
    "email: someone@example.com url: https://example.org/a?b=c&d=e#f",
    "Ünïcödé wörds with ümlauts: Müller, Größe, Straße",
    "emoji skin 👍🏽 flags 🏳️‍🌈 keycap 1️⃣",
]


SPECIAL_SPELLINGS = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")


def plain_text_ids(tok, text):
    """Ids with special-token spellings read as text, as stride reads them
    (the fast tokenizer matches them as added tokens): "[SEP]" is "[", "sep", "]"."""
    ids = [tok.token_to_id("[CLS]")]
    for word in text.split(" "):
        inner = word[1:-1]
        if word in SPECIAL_SPELLINGS:
            for part in ("[", inner, "]"):
                ids += tok.encode(part, add_special_tokens=False).ids
        else:
            ids += tok.encode(word, add_special_tokens=False).ids
    ids.append(tok.token_to_id("[SEP]"))
    return ids


def random_texts(n, seed=1234):
    rng = random.Random(seed)
    alphabet = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"-()[]{}@#$%^&*_+=<>/\\|~`"
                "éèêëàâäôöûüçñÉÀÇÑßøåæœ中文日本語한국어Ελληνικάкириллица\t\n🙂🚀\u0301\u00a0")
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tok = Tokenizer.from_file(a.tokenizer)
    tok.no_truncation()
    tok.no_padding()
    cases = []
    for text in CORPUS + random_texts(200):
        ids = tok.encode(text, add_special_tokens=True).ids
        if any(s in text for s in SPECIAL_SPELLINGS):
            ids = plain_text_ids(tok, text)
        cases.append({"text": text, "ids": ids})
    with open(a.out, "w") as f:
        json.dump({"tokenizer": "all-MiniLM-L6-v2", "cases": cases}, f, ensure_ascii=False, indent=0)
    print(f"wrote {len(cases)} cases to {a.out}")


if __name__ == "__main__":
    main()
