#!/usr/bin/env python3
"""Writes the tokenizer.json goldens: real tokenizers converted by transformers
from GGUF vocabularies (llama.cpp's ggml-vocab-* fixtures and the models in
the stride cache) into Hugging Face folders (tokenizer.json,
tokenizer_config.json), and the ids Hugging Face tokenizers gives each of them
for a corpus of tricky strings. Also the pieces that tokenizers' Split
pre-tokenizer (behavior "isolated") cuts with the regexes the published
tokenizer.json files use for qwen2, llama-bpe (Llama 3), tekken (Mistral Nemo)
and gpt-4o (o200k, gpt-oss), and by other tokenizer.json pre_tokenizer entries
(Split with merged behaviours, Digits, Sequence).

tests/unit/tokenizer/tokenizer_json_test.cpp asserts that stride's tokenizer on
each tokenizer.json, and its pre-tokenizer table, reproduce every entry.

Usage: ~/.cache/stride/venv/bin/python scripts/oracles/tokenizer_json_goldens.py \
           --fixtures ~/.cache/stride/vocab-fixtures --models models \
           --out-dir tests/data/generated/tokenizer_json
"""
import argparse
import json
import os
import shutil
import warnings
from pathlib import Path

from tokenizers import Regex, Tokenizer, pre_tokenizers

SEP = "\n__ggml_vocab_test__\n"

EXTRA = [
    "",
    " ",
    "   leading and trailing spaces   ",
    "multiple     spaces\t\ttabs\n\nnewlines\r\nwindows\n\n\n",
    "numbers: 1234567890123 3.14159 -42 1,000,000 0x1F 2024-05-17 ١٢٣ ४५६",
    "I'M SURE YOU'LL SEE THEY'VE DONE IT, HAVEN'T THEY? she'S he'Ll",
    "camelCaseWord PascalCase XMLHttpRequest iPhone McDonald's",
    "unicode: café naïve résumé Ångström façade ÉCOLE École ÉtÉ",
    "Привет, как дела? ПРИВЕТ Ελληνικά ΓΡΆΜΜΑΤΑ",
    "中文测试：你好，世界！日本語のテキスト、カタカナ。한국어 텍스트",
    "emoji 🚀🔥 👨‍👩‍👧‍👦 ❤️ 🇫🇷 and 😀😃😄",
    "a\u0301 combining e\u0300 accents o\u0308 ǅemal ǈ ß ẞ ﬁ",
    "\u00a0non-breaking\u2009thin\u3000ideographic\u2028line\u2029para\u180emongolian",
    "tiếng Việt có dấu: Nguyễn Thị Minh Khai",
    "العربية: مرحبا بالعالم עברית: שלום עולם हिन्दी: नमस्ते",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "path/to/file.txt a//b ///c\n/d http://x.org/a?b=c",
    "<html><body><h1>Title</h1><p>Para &amp; more</p></body></html>",
    "!!!???...,,,;;;:::'''\"\"\"```$$$+++<<<===>>>^^^|||~~~",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝 ｆｕｌｌｗｉｄｔｈ 𠀀𠀁",
    "x" * 300,
    # Texts llama.cpp treats as end-of-generation; in a tokenizer.json only added tokens are special.
    "<s> </s> <|endoftext|> <|im_end|> <|eot_id|> <end_of_turn> <eos> [EOS] <EOT> <|end|>",
]

# The Split regexes of the published tokenizer.json files.
SPLIT_REGEXES = {
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "tekken": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "gpt-4o": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}


def json_pre_tokenizers():
    """tokenizer.json pre_tokenizer entries beyond the named regexes."""
    return [
        pre_tokenizers.Split(" ", behavior="merged_with_previous"),
        pre_tokenizers.Split(" ", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{N}+|\n"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\s+"), behavior="merged_with_next"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(SPLIT_REGEXES["llama-bpe"]), behavior="isolated"),
                                 pre_tokenizers.Digits(individual_digits=True)]),
    ]


def fixture_strings(fixtures: Path):
    out = []
    for inp in sorted(fixtures.glob("ggml-vocab-*.gguf.inp")):
        text = inp.read_text(encoding="utf-8")
        parts = text.split(SEP)
        if text.endswith(SEP):
            parts.pop()
        out += [p for p in parts if p not in out]
    return out


def convert(gguf: Path, out: Path):
    """transformers' GGUF -> fast tokenizer, saved as a HF folder; None if unsupported."""
    from transformers import AutoTokenizer
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    except Exception as e:  # architectures transformers cannot convert
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    shutil.rmtree(out, ignore_errors=True)
    tok.save_pretrained(str(out))
    return None if (out / "tokenizer.json").is_file() else "no tokenizer.json written"


def special_strings(tok: Tokenizer):
    added = [t.content for t in tok.get_added_tokens_decoder().values()][:6]
    return [f"Hello{t}world {t} x{t}{t}\n{t} y" for t in added] + [f"{t} Hello {t}" for t in added[:3]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", type=Path, required=True)
    ap.add_argument("--models", type=Path, required=True)
    ap.add_argument("--out-dir", type=Path, required=True)
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    corpus = fixture_strings(args.fixtures) + EXTRA

    sources = sorted(args.fixtures.glob("ggml-vocab-*.gguf")) + sorted(args.models.glob("*.gguf"))
    doc = {"tokenizers": {}, "skipped": {}, "splits": {}}
    for gguf in sources:
        name = gguf.name[len("ggml-vocab-"):-5] if gguf.name.startswith("ggml-vocab-") else gguf.stem
        folder = args.out_dir / name
        err = convert(gguf, folder)
        if err:
            doc["skipped"][name] = err
            continue
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        cases = []
        for text in corpus + special_strings(tok):
            cases.append({
                "text": text,
                "ids": tok.encode(text, add_special_tokens=False).ids,
                "ids_with_special": tok.encode(text, add_special_tokens=True).ids,
            })
        doc["tokenizers"][name] = {"dir": name, "cases": cases}
        print(f"[tokenizer_json_goldens] {name}: {len(cases)} strings")

    for name, regex in SPLIT_REGEXES.items():
        split = pre_tokenizers.Split(Regex(regex), behavior="isolated")
        doc["splits"][name] = {
            "regex": regex,
            "cases": [{"text": t, "pieces": [p for p, _ in split.pre_tokenize_str(t)]} for t in corpus],
        }
    doc["json_splits"] = [
        {"pre_tokenizer": json.loads(p.__getstate__()),
         "cases": [{"text": t, "pieces": [x for x, _ in p.pre_tokenize_str(t)]} for t in corpus]}
        for p in json_pre_tokenizers()
    ]
    (args.out_dir / "goldens.json").write_text(json.dumps(doc, ensure_ascii=False, indent=0), encoding="utf-8")
    print(f"[tokenizer_json_goldens] {len(doc['tokenizers'])} tokenizers, skipped: {sorted(doc['skipped'])}")


if __name__ == "__main__":
    main()
