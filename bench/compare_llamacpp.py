#!/usr/bin/env python3
"""Throughput of stride vs llama.cpp (llama-cpp-python) on the same GGUF files.

Usage:
  ~/.cache/stride/venv/bin/python bench/compare_llamacpp.py \
      [--models smollm2 gemma3] [--prompt-lens 512 4096] [--decode 128] \
      [--reps 3] [--threads 2] [--attention dense] [--out bench/out]

For each model and prompt length N: the same N prompt ids (real text tokenized
by llama.cpp) are prefilled, then `--decode` tokens are generated greedily
(EOS ignored). stride: `stride run --prompt-ids ... --json` (its own prefill and
decode tok/s). llama.cpp: same thread count, n_batch = n_ubatch = 512, wall time
of llama_decode for the prompt and for the decode steps; model load excluded on
both sides; one untimed warm-up run each. Medians over --reps. Writes OUT/compare.json and OUT/compare.png
(stride / llama.cpp ratios) and prints a table.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from stride_cli import StrideCli  # noqa: E402

MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}

TEXT = (
    "The river had been rising for three days before anyone in the valley took it seriously. "
    "Farmers moved their animals to higher ground, the school closed early, and the old bridge, "
    "built in 1887 from stone quarried two miles upstream, groaned under the weight of debris. "
    "def merge(a, b):\n    out = []\n    while a and b:\n        out.append(a.pop(0) if a[0] < b[0] "
    "else b.pop(0))\n    return out + a + b\n"
    "In economics, the price of a good is set where supply meets demand; when either curve shifts, "
    "the equilibrium moves, sometimes slowly and sometimes all at once. "
)


def prompt_ids(model_path: str, n: int) -> list:
    from llama_cpp import Llama
    vocab = Llama(model_path=model_path, vocab_only=True, verbose=False)
    ids = vocab.tokenize(TEXT.encode(), add_bos=True, special=False)
    body = vocab.tokenize(TEXT.encode(), add_bos=False, special=False)
    while len(ids) < n:
        ids += body
    return ids[:n]


def llamacpp_session(model_path, warm_ids, n_ctx, threads, flash_attn=False):
    """A llama-cpp-python context of N_CTX tokens, warmed up by one untimed prefill of WARM_IDS
    (weights paged in, compute graph allocated, KV cache first-touched)."""
    from llama_cpp import Llama
    llm = Llama(model_path=model_path, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, logits_all=False, flash_attn=flash_attn, verbose=False)
    llm.eval(warm_ids)
    return llm


def llamacpp_once(llm, ids, n_decode):
    """One timed run on a llamacpp_session: prefill IDS, then N_DECODE greedy tokens.
    Returns (prefill tok/s, decode tok/s)."""
    n_vocab = llm.n_vocab()
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(ids)
    t1 = time.perf_counter()
    for _ in range(n_decode):
        tok = int(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).argmax())
        llm.eval([tok])
    t2 = time.perf_counter()
    return len(ids) / (t1 - t0), (n_decode / (t2 - t1) if n_decode else 0.0)


def bench_llamacpp(model_path, ids, n_decode, threads, reps, flash_attn=False):
    llm = llamacpp_session(model_path, ids, len(ids) + n_decode + 16, threads, flash_attn)
    runs = [llamacpp_once(llm, ids, n_decode) for _ in range(reps)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def bench_stride(cli, model_path, ids, n_decode, threads, reps, attention):
    cli.run(model_path, ids, 1, attention=attention, threads=threads)  # warm-up (page cache)
    pre, dec = [], []
    for _ in range(reps):
        res = cli.run(model_path, ids, n_decode, attention=attention, threads=threads)
        assert res["generated_tokens"] == n_decode, res
        pre.append(float(res["prefill_tok_s"]))
        dec.append(float(res["decode_tok_s"]))
    return statistics.median(pre), statistics.median(dec)


def plot(results, lens, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    metrics = [f"prefill@{n}" for n in lens] + [f"decode@{n}" for n in lens]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(results))
    for i, (model, r) in enumerate(results.items()):
        xs = np.arange(len(metrics)) + i * width
        vals = [r["ratio"].get(m, 0.0) for m in metrics]
        bars = ax.bar(xs, vals, width, label=model)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(metrics)) + width * (len(results) - 1) / 2, metrics)
    ax.set_ylabel("stride / llama.cpp (tok/s)")
    ax.set_title("stride vs llama.cpp throughput (higher is better for stride)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--prompt-lens", nargs="+", type=int, default=[512, 4096])
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--attention", default=None, help="stride --attention (default: stride's)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    a = ap.parse_args()

    cli = StrideCli.from_env()
    os.makedirs(a.out, exist_ok=True)
    results = {}
    for key in a.models:
        path = os.path.join(ROOT, "models", MODELS[key])
        r = {"stride": {}, "llamacpp": {}, "ratio": {}}
        for n in a.prompt_lens:
            ids = prompt_ids(path, n)
            sp, sd = bench_stride(cli, path, ids, a.decode, a.threads, a.reps, a.attention)
            lp, ld = bench_llamacpp(path, ids, a.decode, a.threads, a.reps)
            for eng, p, d in (("stride", sp, sd), ("llamacpp", lp, ld)):
                r[eng][f"prefill@{n}"], r[eng][f"decode@{n}"] = p, d
            r["ratio"][f"prefill@{n}"], r["ratio"][f"decode@{n}"] = sp / lp, sd / ld
            print(f"{key} N={n}: prefill stride {sp:8.1f} llama.cpp {lp:8.1f} tok/s | "
                  f"decode stride {sd:6.1f} llama.cpp {ld:6.1f} tok/s", flush=True)
        results[key] = r

    out = {"config": {"threads": a.threads, "decode_tokens": a.decode, "reps": a.reps,
                      "prompt_lens": a.prompt_lens, "n_batch": 512, "attention": a.attention,
                      "statistic": "median"},
           "machine": {"cpu": platform.processor() or platform.machine(),
                       "cores": os.cpu_count(), "python": platform.python_version()},
           "results": results}
    with open(os.path.join(a.out, "compare.json"), "w") as f:
        json.dump(out, f, indent=2)
    plot(results, a.prompt_lens, os.path.join(a.out, "compare.png"))

    print(f"\n{'model':<9} {'metric':<14} {'stride':>10} {'llama.cpp':>10} {'ratio':>7}")
    for key, r in results.items():
        for m in r["ratio"]:
            print(f"{key:<9} {m:<14} {r['stride'][m]:>10.1f} {r['llamacpp'][m]:>10.1f} "
                  f"{r['ratio'][m]:>7.2f}")
    print(f"wrote {os.path.join(a.out, 'compare.json')} and compare.png")


if __name__ == "__main__":
    main()
