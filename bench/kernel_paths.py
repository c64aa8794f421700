#!/usr/bin/env python3
"""Per-op and end-to-end speed of the AVX2 and AVX-512 kernel paths, side by side in one run.

Per op (one thread, cpu time, the best of --reps runs per path, the paths alternating):
  * build/bench_ops: rmsnorm, silu_mul, gelu_tanh_mul, add, rope (adjacent, NeoX),
    activation quantization at SmolLM2 / Gemma-3 sizes, decode (tok1) and prefill
    (tok512); softmax over a vocabulary, Gemma's logit soft-cap;
  * build/bench_matmul: the float matmul (F32, F16, BF16 weights, 576x1536) at 1, 16
    and 512 tokens, the optional vdpbf16ps tiles for BF16 (AVX-512 run only), and
    Q4_1 through the packed tiles (activation quantization + VNNI) for reference.
End to end: `stride run --json` on SmolLM2-135M Q4_1 and Gemma-3-270M Q4_K_M per path
(bench/cpu_paths.py's runs; median prefill and decode tok/s over --reps).
Machine: build/machine_peak's STREAM triad (GB/s) and decode's share of it:
decode tok/s x bytes of weights read per token / triad (bench/compare.py's model_bytes).
Ratios are avx512 speed / avx2 speed (above 1: AVX-512 faster).
Writes OUT.json and OUT.png.

  ~/.cache/stride/venv/bin/python bench/kernel_paths.py [--reps 3] [--threads 2] [--no-e2e]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  model_bytes
import cpu_paths  # noqa: E402  run_once, supported_paths, MODELS

ROOT = Path(__file__).resolve().parent.parent
MATMUL_FILTER = r"^((F32|F16|BF16)/576x1536/tok(1|16|512)/t1(/vdpbf16ps)?|Q4_1/576x1536/tok(1|512)/t1/packed)/real_time$"


def micro(binary, path, bench_filter, min_time):
    env = dict(os.environ, STRIDE_CPU=path)
    cmd = [str(binary), "--benchmark_format=json", f"--benchmark_min_time={min_time}"]
    if bench_filter:
        cmd.append(f"--benchmark_filter={bench_filter}")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("error_occurred"):
            continue
        times[b["name"].removesuffix("/real_time")] = b["cpu_time"]  # microseconds
    return times


def cpu_brand(binary):
    return cpu_paths.supported_paths(binary)[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build" / "stride"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--min-time", type=float, default=0.2, help="google benchmark seconds per op")
    ap.add_argument("--no-e2e", action="store_true", help="per-op figures only")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "kernel_paths"))
    a = ap.parse_args()

    bdir = Path(a.bin).parent
    paths, brand = cpu_paths.supported_paths(a.bin)
    # This script compares the vector paths; bench/shapes.py also runs amx.
    paths = [p for p in paths if p in ("avx2", "avx512")]
    if paths != ["avx2", "avx512"]:
        sys.exit(f"this CPU runs {paths}: nothing to compare")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
              "cpu": brand, "reps": a.reps, "threads": a.threads}

    # Per op: the best cpu time per path over the reps, paths alternating.
    best = {p: {} for p in paths}
    for _ in range(a.reps):
        for p in paths:
            for binary, flt in ((bdir / "bench_ops", None), (bdir / "bench_matmul", MATMUL_FILTER)):
                for name, t in micro(binary, p, flt, a.min_time).items():
                    best[p][name] = min(t, best[p].get(name, t))
    ops = {}
    for name in best["avx2"]:
        if name in best["avx512"] and not name.endswith("/vdpbf16ps"):  # AVX-512 only: below
            t2, t5 = best["avx2"][name], best["avx512"][name]
            ops[name] = {"avx2_us": t2, "avx512_us": t5, "ratio": t2 / t5}
            print(f"{name:44s} avx2 {t2:10.2f} us  avx512 {t5:10.2f} us  {t2 / t5:5.2f}x")
    # The vdpbf16ps tiles against the default AVX-512 and the AVX2 BF16 tiles.
    for name, t in best["avx512"].items():
        if name.endswith("/vdpbf16ps"):
            base = name.removesuffix("/vdpbf16ps")
            ops[name] = {"avx512_us": t, "vs_avx512_widened": best["avx512"][base] / t,
                         "vs_avx2": best["avx2"][base] / t}
            print(f"{name:44s} avx512 {t:10.2f} us  {best['avx512'][base] / t:5.2f}x the widened "
                  f"AVX-512 tiles, {best['avx2'][base] / t:5.2f}x AVX2")
    report["ops"] = ops

    mach = compare.machine(str(bdir), a.threads)
    report["machine"] = mach
    print(f"triad {mach['triad_gbs']:.1f} GB/s with {a.threads} thread(s) (the share's denominator); "
          f"a 1-thread run gave {mach['triad_gbs_1t']:.1f} GB/s")

    if not a.no_e2e:
        e2e = {}
        for model in cpu_paths.MODELS:
            samples = {p: {"prefill": [], "decode": []} for p in paths}
            for _ in range(a.reps):
                for p in paths:
                    j = cpu_paths.run_once(a.bin, model, p, a.prompt_tokens, a.gen_tokens, a.threads)
                    samples[p]["prefill"].append(j["prefill_tok_s"])
                    samples[p]["decode"].append(j["decode_tok_s"])
            med = {p: {k: statistics.median(v) for k, v in s.items()} for p, s in samples.items()}
            mb = compare.model_bytes(str(ROOT / "models" / model))
            for p in paths:
                med[p]["decode_gbs"] = med[p]["decode"] * mb / 1e9
                med[p]["decode_triad_share"] = med[p]["decode_gbs"] / mach["triad_gbs"]
            e2e[model] = {"bytes_per_token": mb, **med,
                          "prefill_ratio": med["avx512"]["prefill"] / med["avx2"]["prefill"],
                          "decode_ratio": med["avx512"]["decode"] / med["avx2"]["decode"]}
            for p in paths:
                print(f"{model:36s} {p:7s} prefill {med[p]['prefill']:8.1f} tok/s  decode "
                      f"{med[p]['decode']:7.1f} tok/s = {med[p]['decode_gbs']:.2f} GB/s "
                      f"({med[p]['decode_triad_share']:.2f} of triad)")
            print(f"{model:36s} avx512/avx2 prefill {e2e[model]['prefill_ratio']:.2f}x  "
                  f"decode {e2e[model]['decode_ratio']:.2f}x")
        report["end_to_end"] = e2e

    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(report, indent=1) + "\n")
    plot(report, a.out + ".png")
    print(f"wrote {a.out}.json and .png")


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [n for n, o in report["ops"].items() if "ratio" in o]
    e2e = report.get("end_to_end", {})
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.28 * len(names) + 2),
                             gridspec_kw={"width_ratios": [3, 2]})
    ax = axes[0]
    ax.barh(range(len(names)), [report["ops"][n]["ratio"] for n in names], color="tab:blue")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("avx512 / avx2 speed (one thread)")
    ax = axes[1]
    labels, ratios = [], []
    for model, r in e2e.items():
        short = model.split("-")[0]
        labels += [f"{short} prefill", f"{short} decode"]
        ratios += [r["prefill_ratio"], r["decode_ratio"]]
    ax.bar(range(len(labels)), ratios, color="tab:orange")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel(f"avx512 / avx2 tok/s ({report['threads']} threads)")
    for i, (model, r) in enumerate(e2e.items()):
        ax.text(2 * i + 1, r["decode_ratio"], f"{r['avx512']['decode_triad_share']:.2f} of triad",
                ha="center", va="bottom", fontsize=7)
    fig.suptitle(f"stride kernel paths, {report['cpu']}, {report['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
