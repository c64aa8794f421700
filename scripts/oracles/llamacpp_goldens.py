#!/usr/bin/env python3
"""llama.cpp reference outputs for the real models (greedy tokens, top-k log-probs,
tokenizations), consumed by tests/python/models/test_real_models.py.

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/llamacpp_goldens.py \
      [--models-dir models] [--out tests/data/generated/llamacpp_goldens.json]

For each model and prompt: the prompt is tokenized by llama.cpp (special tokens
parsed, BOS as the model's metadata says), then 64 tokens are generated greedily
(EOS ignored), one llama.cpp decode step per token. At every generated position
the top-K token ids and their full log-softmax values are stored, so a test can
compute top-1 agreement and a (top-K truncated) KL against stride.

The same prompt + continuation is also scored by llama.cpp in one batch
(teacher forcing, like `stride score`): "tf_topk_*". llama.cpp's batch and
one-token-at-a-time logits differ slightly, so at near ties their argmaxes
differ too (about 1 in 100 positions here); the batch one is the like-for-like
reference for stride's teacher-forced scores.
"""
import argparse
import json
import os
import sys

import numpy as np

N_GEN = 64
TOP_K = 16
SEED = 1234

SMOL_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chatml(user: str, system: str = SMOL_SYSTEM) -> str:
    """SmolLM2's chat template, applied by hand as raw text."""
    return (f"<|im_start|>system\n{system}<|im_end|>\n"
            f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")


MODELS = {
    "smollm2": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "prompts": {
            "capital": chatml("What is the capital of France? Answer in one sentence."),
            "fibonacci": chatml("Write a Python function that returns the n-th Fibonacci number."),
            "sky": chatml("Explain to a ten-year-old why the sky is blue."),
            "paperclip": chatml("List three unusual uses for a paperclip.",
                                system="You are a creative assistant."),
        },
    },
    "gemma3": {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "prompts": {
            "rome": "The history of the Roman Empire began",
            "quicksort": "def quicksort(arr):\n    \"\"\"Sort a list of numbers.\"\"\"\n",
            "story": "Once upon a time, in a small village by the sea,",
            "recipe": "Ingredients for a simple pancake recipe:\n1.",
        },
    },
}

# Tokenizer corpus: Unicode, whitespace runs, code, CJK, emoji, numbers.
TOKENIZER_CORPUS = [
    "Hello world",
    " Hello world",
    "Hello  world   with    runs of     spaces",
    "\n\n\tTabs\tand\nnewlines\r\n  mixed \n",
    "The year 2024 had 366 days; π ≈ 3.14159265358979 and 1,000,000 > 999_999.",
    "12345678901234567890 0.5e-10 -42 +7 0x1F 1e9",
    "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2}  # comment\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "Ünïcödé àccénts: café, naïve, façade, Straße, Øresund, Ægir",
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "Emoji: 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️",
    "Mixed: résumé—em dash – en dash … “quotes” ‘single’ «guillemets»",
    "Привет, мир! Γειά σου Κόσμε! مرحبا بالعالم! שלום עולם!",
    "   leading spaces and trailing spaces   ",
    "I'm you're they'll we've she'd it's can't WON'T",
    "https://example.com/path?query=1&x=y#frag user@mail.org",
    "a" * 50 + " " + "ab" * 20,
    "<html><body><p class=\"x\">Text &amp; more</p></body></html>",
    "∑_{i=1}^{n} i² = n(n+1)(2n+1)/6 ∀ n ∈ ℕ",
    "",
]


def load_llama(path: str, n_ctx: int, logits_all: bool = False):
    from llama_cpp import Llama
    return Llama(model_path=path, n_ctx=n_ctx, n_batch=512, n_threads=2,
                 seed=SEED, logits_all=logits_all, verbose=False)


def last_logits(llm) -> np.ndarray:
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def topk(lp: np.ndarray):
    part = np.argpartition(-lp, TOP_K)[:TOP_K]
    top = part[np.argsort(-lp[part], kind="stable")]
    return [int(t) for t in top], [float(lp[t]) for t in top]


def teacher_forced(llm_all, prompt_ids, gen):
    """Top-K log-probs at each generated position from one batched forward."""
    llm_all.reset()
    llm_all.eval(prompt_ids + gen[:-1])
    rows = np.array(llm_all.scores[len(prompt_ids) - 1:len(prompt_ids) + len(gen) - 1])
    out = [topk(log_softmax(r)) for r in rows]
    return [o[0] for o in out], [o[1] for o in out]


def greedy(llm, prompt_ids):
    llm.reset()
    llm.eval(prompt_ids)
    gen, topk_ids, topk_lp = [], [], []
    for _ in range(N_GEN):
        lp = log_softmax(last_logits(llm))
        ids, lps = topk(lp)
        tok = ids[0]
        gen.append(tok)
        topk_ids.append(ids)
        topk_lp.append(lps)
        llm.eval([tok])  # EOS ignored on purpose: fixed-length comparison
    return gen, topk_ids, topk_lp


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", default=os.path.join(root, "models"))
    ap.add_argument("--out", default=os.path.join(root, "tests/data/generated/llamacpp_goldens.json"))
    args = ap.parse_args()

    import llama_cpp
    out = {"llama_cpp_python": llama_cpp.__version__, "n_gen": N_GEN, "top_k": TOP_K,
           "models": {}}
    for key, spec in MODELS.items():
        path = os.path.join(args.models_dir, spec["file"])
        if not os.path.exists(path):
            sys.exit(f"missing model {path}: run scripts/fetch_models")
        llm = load_llama(path, n_ctx=1024)
        cases = []
        for name, text in spec["prompts"].items():
            ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
            gen, tk_ids, tk_lp = greedy(llm, ids)
            cases.append({"name": name, "prompt": text, "prompt_ids": ids,
                          "generated_ids": gen, "topk_ids": tk_ids, "topk_logprobs": tk_lp})
            print(f"golden {key}/{name}: prompt {len(ids)} tokens -> "
                  f"{llm.detokenize(gen[:16]).decode('utf-8', 'replace')!r}...")
        llm_all = load_llama(path, n_ctx=256, logits_all=True)
        for case in cases:
            case["tf_topk_ids"], case["tf_topk_logprobs"] = teacher_forced(
                llm_all, case["prompt_ids"], case["generated_ids"])
            tf_top1 = [t[0] for t in case["tf_topk_ids"]]
            same = sum(a == b for a, b in zip(tf_top1, case["generated_ids"]))
            print(f"golden {key}/{case['name']}: llama.cpp batch vs step-by-step top-1 "
                  f"{same}/{len(tf_top1)}")
        del llm_all
        toks = [{"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=False, special=False)}
                for t in TOKENIZER_CORPUS]
        out["models"][key] = {"file": spec["file"], "cases": cases, "tokenize": toks}
        del llm

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
