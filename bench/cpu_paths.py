#!/usr/bin/env python3
"""Prefill and decode speed of each kernel path, side by side in one run.

Runs `stride run --json` on both real models with STRIDE_CPU=avx2 and
STRIDE_CPU=avx512 (each path the CPU supports), and optionally a second
binary (e.g. a -march=native build) on its best path, alternating the
configurations rep by rep so that drift on a shared machine hits all of
them alike. Reports the median tok/s of each and the ratio to the AVX2
path. With --baseline-bin, an earlier build runs on every path too
("baseline-<path>"), and each path's new/baseline ratio is reported (a
refactor must not slow any path). Writes bench/out/cpu_paths.json and .png.

  bench/cpu_paths.py [--native-bin build-native/stride] [--baseline-bin OLD/stride] [--reps 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]


def prompt_ids(n):
    return " ".join(str(100 + (i * 37) % 5000) for i in range(n))


def run_once(binary, model, path, prompt_tokens, gen_tokens, threads):
    env = dict(os.environ)
    if path:
        env["STRIDE_CPU"] = path
    else:
        env.pop("STRIDE_CPU", None)
    cmd = [binary, "run", "-m", str(ROOT / "models" / model), "--prompt-ids", prompt_ids(prompt_tokens),
           "-n", str(gen_tokens), "--json", "--threads", str(threads), "--ignore-eos"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def supported_paths(binary):
    res = subprocess.run([binary, "info", "--json"], capture_output=True, text=True, check=True)
    return json.loads(res.stdout)["cpu"]["supported_paths"], json.loads(res.stdout)["cpu"]["brand"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build" / "stride"))
    ap.add_argument("--native-bin", default="", help="a -march=native build to compare as well")
    ap.add_argument("--baseline-bin", default="", help="an earlier build, run on every path alongside")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "cpu_paths"))
    a = ap.parse_args()

    paths, brand = supported_paths(a.bin)
    configs = [(p, a.bin, p) for p in paths]
    if a.native_bin:
        configs.append(("native", a.native_bin, None))
    if a.baseline_bin:
        configs += [(f"baseline-{p}", a.baseline_bin, p) for p in paths]
    results = {}
    for model in MODELS:
        samples = {c[0]: {"prefill": [], "decode": []} for c in configs}
        for _ in range(a.reps):
            for name, binary, path in configs:
                j = run_once(binary, model, path, a.prompt_tokens, a.gen_tokens, a.threads)
                samples[name]["prefill"].append(j["prefill_tok_s"])
                samples[name]["decode"].append(j["decode_tok_s"])
        med = {n: {k: statistics.median(v) for k, v in s.items()} for n, s in samples.items()}
        base = med[paths[0]]
        results[model] = {n: {**m, "prefill_ratio": m["prefill"] / base["prefill"],
                              "decode_ratio": m["decode"] / base["decode"]} for n, m in med.items()}
        for n, m in results[model].items():
            print(f"{model:36s} {n:16s} prefill {m['prefill']:8.1f} tok/s ({m['prefill_ratio']:.2f}x)  "
                  f"decode {m['decode']:7.1f} tok/s ({m['decode_ratio']:.2f}x)")
        if a.baseline_bin:
            for p in paths:
                new, old = med[p], med[f"baseline-{p}"]
                results[model][p]["vs_baseline"] = {k: new[k] / old[k] for k in ("prefill", "decode")}
                print(f"{model:36s} {p:16s} new/baseline: prefill {new['prefill'] / old['prefill']:.3f}x  "
                      f"decode {new['decode'] / old['decode']:.3f}x")

    report = {"cpu": brand, "threads": a.threads, "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens,
              "reps": a.reps, "baseline": paths[0], "baseline_bin": a.baseline_bin, "results": results}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(report, indent=1) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    names = [c[0] for c in configs]
    for ax, kind in zip(axes, ["prefill", "decode"]):
        width = 0.8 / len(names)
        for i, n in enumerate(names):
            ax.bar([k + i * width for k in range(len(MODELS))], [results[m][n][kind] for m in MODELS], width, label=n)
        ax.set_xticks([k + width * (len(names) - 1) / 2 for k in range(len(MODELS))])
        ax.set_xticklabels([m.split("-")[0] for m in MODELS])
        ax.set_ylabel(f"{kind} tok/s")
        ax.legend()
    fig.suptitle(f"stride kernel paths, {brand}, {a.threads} threads")
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=100)
    print(f"wrote {a.out}.json and .png")


if __name__ == "__main__":
    main()
