#!/usr/bin/env python3
"""What schedule-invariant logits cost: prefill and decode tok/s of this build
against a baseline build, and top-k's per-query selection (the default)
against per-block selection (select=block), side by side in one run.

Usage:
  ~/.cache/stride/venv/bin/python bench/invariance_cost.py --baseline BIN \
      [--models smollm2 gemma3] [--prompt-lens 512 4096] [--decode 64] [--reps 3] \
      [--threads 2] [--out bench/out]

BIN is a `stride` built from a commit before the invariance work, e.g.
  git worktree add /tmp/base 1641ac0^ && cmake -S /tmp/base -B /tmp/base/build \
      -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRIDE_TESTS=OFF && \
  cmake --build /tmp/base/build --target stride
(--baseline '' skips that half). Runs alternate between the variants in every
repetition, so drift on a shared machine hits all of them alike; medians over
--reps. Writes OUT/invariance_cost.json and OUT/invariance_cost.png (ratios
to the reference variant of each pair).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from stride_cli import StrideCli  # noqa: E402

MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}
TOPK = "topk:sparsity=0.9"


def prompt_ids(cli, model, n):
    text = open(os.path.join(ROOT, "docs", "serving.md")).read()
    text += open(os.path.join(ROOT, "docs", "architecture.md")).read()
    ids = cli.tokenize(model, text)
    while len(ids) < n:
        ids += ids
    return ids[:n]


def pairs(baseline):
    """(label, reference variant, candidate variant); a variant is (binary or None, attention)."""
    out = []
    if baseline:
        out.append(("dense: invariant / baseline", (baseline, "dense"), (None, "dense")))
        out.append(("topk: invariant / baseline", (baseline, TOPK), (None, TOPK)))
    out.append(("topk: select=query / select=block", (None, TOPK + ",select=block"), (None, TOPK)))
    return out


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="stride binary built before the invariance work ('' skips)")
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--prompt-lens", nargs="+", type=int, default=[512, 4096])
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    a = ap.parse_args()
    head = StrideCli.from_env()
    clis = {None: head}
    if a.baseline:
        clis[a.baseline] = StrideCli(a.baseline)
    rows = []
    for name in a.models:
        model = os.path.join(ROOT, "models", MODELS[name])
        for n in a.prompt_lens:
            ids = prompt_ids(head, model, n)
            for label, ref, cand in pairs(a.baseline):
                samples = {ref: ([], []), cand: ([], [])}
                for v in samples:  # warm-up: page cache
                    clis[v[0]].run(model, ids, 1, attention=v[1], threads=a.threads)
                for _ in range(a.reps):
                    for v in (ref, cand):
                        r = clis[v[0]].run(model, ids, a.decode, attention=v[1], threads=a.threads)
                        samples[v][0].append(float(r["prefill_tok_s"]))
                        samples[v][1].append(float(r["decode_tok_s"]))
                med = {v: (statistics.median(p), statistics.median(d)) for v, (p, d) in samples.items()}
                row = {"model": name, "prompt": n, "pair": label,
                       "ref_prefill_tok_s": med[ref][0], "cand_prefill_tok_s": med[cand][0],
                       "ref_decode_tok_s": med[ref][1], "cand_decode_tok_s": med[cand][1],
                       "prefill_ratio": med[cand][0] / med[ref][0], "decode_ratio": med[cand][1] / med[ref][1]}
                rows.append(row)
                print(f"{name:8s} {n:6d}  {label:36s} prefill {row['prefill_ratio']:.3f}x "
                      f"({med[ref][0]:.0f} -> {med[cand][0]:.0f} tok/s)  decode {row['decode_ratio']:.3f}x "
                      f"({med[ref][1]:.1f} -> {med[cand][1]:.1f} tok/s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    report = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
              "machine": f"{cpu_name()}, {os.cpu_count()} cores", "threads": a.threads, "reps": a.reps,
              "decode_tokens": a.decode, "baseline": a.baseline, "rows": rows}
    with open(os.path.join(a.out, "invariance_cost.json"), "w") as f:
        json.dump(report, f, indent=1)
    plot(rows, os.path.join(a.out, "invariance_cost.png"))


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['model']}@{r['prompt']}\n{r['pair']}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(rows)), 5))
    ax.bar([i - 0.2 for i in x], [r["prefill_ratio"] for r in rows], 0.4, label="prefill")
    ax.bar([i + 0.2 for i in x], [r["decode_ratio"] for r in rows], 0.4, label="decode")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("tok/s ratio (candidate / reference)")
    ax.set_title("Cost of schedule-invariant logits")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
