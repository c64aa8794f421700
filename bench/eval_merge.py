#!/usr/bin/env python3
"""Merges `stride eval --json` reports of one sweep (dense recorded once, each
policy scored in its own run with `--reference`) into one report: a markdown
table (task x policy, accuracy in percent with its Wilson 95% interval, per
length), the mean and pages read per policy, the merged JSON (in `stride eval
--json`'s format) and a plot of each policy's mean accuracy against length with
its interval.

    ~/.cache/stride/venv/bin/python bench/eval_merge.py dense.json topk.json rswa.json --out bench/out/eval_sweep

Every report must hold the same dense trials (same prompt fingerprints and
answers); a report from other prompts or another model is refused.
"""
import argparse
import json
import math
import sys

Z95 = 1.959963984540054


def wilson(rate, n):
    """Wilson's score interval; reports written before stride eval gave ci95
    are read through this (src/eval/wilson_interval.cpp is the same formula)."""
    if n <= 0:
        return 0.0, 1.0
    d = 1 + Z95 * Z95 / n
    c = (rate + Z95 * Z95 / (2 * n)) / d
    h = Z95 * math.sqrt(rate * (1 - rate) / n + Z95 * Z95 / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def cell_text(s):
    lo, hi = s.get("ci95") or wilson(s["accuracy"], s.get("trials", 0))
    return f"{100 * s['accuracy']:.0f} [{100 * lo:.0f}–{100 * hi:.0f}]"


def load(path):
    with open(path) as f:
        r = json.load(f)
    if not isinstance(r, dict) or not isinstance(r.get("trials"), list):
        sys.exit(f"eval_merge: {path} is not a stride eval report")
    return r


def dense_key(r):
    return sorted((t["prompt_sha256"], t["answer"]) for t in r["trials"] if t["policy"] == "dense")


def merge(reports, paths):
    base = reports[0]
    want = dense_key(base)
    for r, p in zip(reports[1:], paths[1:]):
        if r.get("model_sha256") != base.get("model_sha256") or dense_key(r) != want:
            sys.exit(f"eval_merge: {p} has other dense trials than {paths[0]} (another sweep?)")
    out = {k: base[k] for k in ("model", "model_sha256", "seed", "depths", "trials_per_task", "chunk", "page_size",
                                "chat", "tasks", "lengths") if k in base}
    out["sources"] = paths
    out["summary"], out["policies"], out["trials"] = [], [], []
    seen = set()
    for r in reports:
        for p in r["policies"]:
            if p["policy"] in seen:
                continue
            seen.add(p["policy"])
            out["policies"].append(p)
            out["summary"] += [s for s in r["summary"] if s["policy"] == p["policy"]]
            out["trials"] += [t for t in r["trials"] if t["policy"] == p["policy"]]
    return out


def table(m):
    pols = [p["policy"] for p in m["policies"]]
    cells = {(s["task"], s["length"], s["policy"]): s for s in m["summary"]}
    acc = {k: s["accuracy"] for k, s in cells.items()}
    lines = []
    for length in sorted({s["length"] for s in m["summary"]}):
        tasks = list(dict.fromkeys(s["task"] for s in m["summary"] if s["length"] == length))
        n = {p: sum(cells[(t, length, p)].get("trials", 0) for t in tasks) for p in pols}
        lines.append(f"length {length} (accuracy %, Wilson 95% interval; {max(n.values())} trials per policy)\n")
        lines.append("| task | " + " | ".join(pols) + " |")
        lines.append("|---" * (len(pols) + 1) + "|")
        for t in tasks:
            lines.append(f"| {t} | " + " | ".join(cell_text(cells[(t, length, p)]) for p in pols) + " |")
        means = [sum(acc[(t, length, p)] for t in tasks) / len(tasks) for p in pols]
        ci = [wilson(v, n[p]) for v, p in zip(means, pols)]
        lines.append("| mean (vs dense) | " + " | ".join(
            (f"{100 * v:.1f}" if i == 0 else f"{100 * v:.1f} ({100 * (v - means[0]):+.1f})")
            + f" [{100 * ci[i][0]:.0f}–{100 * ci[i][1]:.0f}]"
            for i, v in enumerate(means)) + " |")
        lines.append("| pages read | " + " | ".join(f"{p['pages_read_share']:.2f}" for p in m["policies"]) + " |")
        lines.append("| seconds | " + " | ".join(f"{p['seconds']:.0f}" for p in m["policies"]) + " |\n")
    return "\n".join(lines)


def plot(m, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lengths = sorted({s["length"] for s in m["summary"]})
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for p in [x["policy"] for x in m["policies"]]:
        xs, ys, lo, hi = [], [], [], []
        for length in lengths:
            cs = [s for s in m["summary"] if s["length"] == length and s["policy"] == p]
            if not cs:
                continue
            mean = sum(c["accuracy"] for c in cs) / len(cs)
            a, b = wilson(mean, sum(c.get("trials", 0) for c in cs))
            xs.append(length)
            ys.append(100 * mean)
            lo.append(100 * (mean - a))
            hi.append(100 * (b - mean))
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=p)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths)
    ax.set_xticklabels([f"{l // 1024}K" if l >= 1024 else str(l) for l in lengths])
    ax.set_ylim(0, 100)
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("suite mean accuracy % (Wilson 95%)")
    ax.set_title(f"stride eval: {m['model'].split('/')[-1]}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--out", required=True, help="path prefix: writes .json, .md and .png")
    a = ap.parse_args()
    m = merge([load(p) for p in a.reports], a.reports)
    md = table(m)
    with open(a.out + ".json", "w") as f:
        json.dump(m, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(md + "\n")
    plot(m, a.out + ".png")
    print(md)


if __name__ == "__main__":
    main()
