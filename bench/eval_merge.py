#!/usr/bin/env python3
"""Merges `stride eval --json` reports of one sweep (dense recorded once, each
policy scored in its own run with `--reference`) into one report: a markdown
table (task x policy, accuracy in percent, per length), the mean and pages
read per policy, and the merged JSON (in `stride eval --json`'s format).

    ~/.cache/stride/venv/bin/python bench/eval_merge.py dense.json topk.json rswa.json --out bench/out/eval_sweep

Every report must hold the same dense trials (same prompt fingerprints and
answers); a report from other prompts or another model is refused.
"""
import argparse
import json
import sys


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
    acc = {(s["task"], s["length"], s["policy"]): s["accuracy"] for s in m["summary"]}
    lines = []
    for length in sorted({s["length"] for s in m["summary"]}):
        tasks = list(dict.fromkeys(s["task"] for s in m["summary"] if s["length"] == length))
        lines.append(f"length {length}\n")
        lines.append("| task | " + " | ".join(pols) + " |")
        lines.append("|---" * (len(pols) + 1) + "|")
        for t in tasks:
            lines.append(f"| {t} | " + " | ".join(f"{100 * acc[(t, length, p)]:.0f}" for p in pols) + " |")
        means = [sum(acc[(t, length, p)] for t in tasks) / len(tasks) for p in pols]
        lines.append("| mean (vs dense) | " + " | ".join(
            f"{100 * v:.1f}" if i == 0 else f"{100 * v:.1f} ({100 * (v - means[0]):+.1f})"
            for i, v in enumerate(means)) + " |")
        lines.append("| pages read | " + " | ".join(f"{p['pages_read_share']:.2f}" for p in m["policies"]) + " |")
        lines.append("| seconds | " + " | ".join(f"{p['seconds']:.0f}" for p in m["policies"]) + " |\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--out", required=True, help="path prefix: writes .json and .md")
    a = ap.parse_args()
    m = merge([load(p) for p in a.reports], a.reports)
    md = table(m)
    with open(a.out + ".json", "w") as f:
        json.dump(m, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
