#!/usr/bin/env python3
"""Issue-5 table: stride vs llama.cpp on this machine, side by side, in one run.

Usage (one command; figures are medians over --reps):
  nice -n -5 ~/.cache/stride/venv/bin/python bench/compare.py [--reps 3] [--threads 2]
      [--long 32768] [--depth 131072] [--llama-long 8192] [--quick | --long-only] [--out bench/out]

Measures, with today's machine figures from bench/micro/machine_peak.cpp:
  * prefill tok/s at 512 and 4096 prompt tokens, both real models, and decode tok/s
    (128 tokens after 512), stride vs llama.cpp (bench/compare_llamacpp.py's harness);
  * decode share of the bandwidth roofline: decode tok/s x model bytes per token / triad GB/s
    (both models tie the output head to the embedding, so every weight byte is read per token);
  * SmolLM2 long prompt (--long tokens): stride rswa:sinks=4,window=4092 prefill vs llama.cpp
    dense. llama.cpp dense is run at --llama-long tokens; if that is shorter than --long, its
    32K time is extrapolated from a fit t(n) = a n + b n^2 through its 4096 and --llama-long runs
    (marked "extrapolated" in the JSON and the summary);
  * decode tok/s at depth --depth vs depth 1K, both under --depth-policy (default
    rswa:sinks=4,window=1020, a window that 1K tokens fill, so both read the same keys);
  * thread scaling 1 -> 2 of prefill@512 (stride).
Writes OUT/compare.json, OUT/compare.png and OUT/summary.md.
Binaries: STRIDE_BIN (default build/stride); machine_peak and bench_engine next to it.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import compare_llamacpp as cl  # noqa: E402
from stride_cli import StrideCli  # noqa: E402

RSWA = "rswa:sinks=4,window=4092"
# Decode at depth vs 1K compares equal work: a window that 1K tokens already
# fill, so both points read S + W keys and only the depth differs.
DEPTH_RSWA = "rswa:sinks=4,window=1020"


def build_dir():
    b = os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride"))
    os.environ["STRIDE_BIN"] = b
    return os.path.dirname(b)


def machine(bdir, threads):
    out = subprocess.run([os.path.join(bdir, "machine_peak"), str(threads)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def model_bytes(path):
    import gguf
    r = gguf.GGUFReader(path)
    names = {t.name: int(t.n_bytes) for t in r.tensors}
    total = sum(names.values())
    if "output.weight" in names:  # untied: the embedding table is only gathered from
        total -= names.get("token_embd.weight", 0)
    return total


def engine_run(bdir, model, ids, attention, threads, decode, kv_mb=None, reps=1):
    with tempfile.NamedTemporaryFile("w", suffix=".ids", delete=False) as f:
        f.write(" ".join(map(str, ids)))
        path = f.name
    res = []
    try:
        for _ in range(reps):
            cmd = [os.path.join(bdir, "bench_engine"), model, path, attention, str(threads), str(decode)]
            if kv_mb:
                cmd.append(str(kv_mb))
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            res.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        os.unlink(path)
    med = lambda k: statistics.median(r[k] for r in res)  # noqa: E731
    return {"prefill_tok_s": med("prefill_tok_s"), "decode_tok_s": med("decode_tok_s"),
            "prefill_seconds": med("prefill_seconds"), "peak_kv_bytes": res[-1]["peak_kv_bytes"],
            "runs": len(res)}


def llama_prefill(model, ids, threads):
    from llama_cpp import Llama
    llm = Llama(model_path=model, n_ctx=len(ids) + 16, n_batch=512, n_ubatch=512,
                n_threads=threads, n_threads_batch=threads, verbose=False)
    t0 = time.perf_counter()
    llm.eval(ids)
    dt = time.perf_counter() - t0
    del llm
    return dt


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if r.get("ratio") is not None]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    xs = np.arange(len(rows))
    bars = ax.bar(xs, [r["ratio"] for r in rows],
                  color=["tab:green" if r["met"] else "tab:red" for r in rows])
    ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.scatter(xs, [r["target"] for r in rows], marker="_", s=400, color="k", label="target", zorder=3)
    ax.set_xticks(xs, [r["name"] for r in rows], rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("figure / baseline")
    ax.set_title("stride, issue-5 targets (green: met)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--long", type=int, default=32768)
    ap.add_argument("--depth", type=int, default=32768)
    ap.add_argument("--llama-long", type=int, default=8192)
    ap.add_argument("--quick", action="store_true", help="skip the long-context rows")
    ap.add_argument("--long-only", action="store_true", help="only the long-context rows")
    ap.add_argument("--depth-policy", default=DEPTH_RSWA,
                    help="policy of the decode-at-depth row; its window should fit in 1K tokens so "
                         "that the 1K point already reads a full window")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    a = ap.parse_args()
    bdir = build_dir()
    cli = StrideCli.from_env()
    os.makedirs(a.out, exist_ok=True)
    T = a.threads
    log = lambda *s: print(*s, flush=True)  # noqa: E731

    mach = machine(bdir, T)
    log("machine:", mach)
    rows, raw = [], {}

    def row(name, value, base, target, unit, note=""):
        ratio = value / base if base else None
        rows.append({"name": name, "value": value, "baseline": base, "ratio": ratio,
                     "target": target, "met": ratio is not None and ratio >= target,
                     "unit": unit, "note": note})
        log(f"{name:<40} {value:10.2f} {base if base else 0:10.2f} "
            f"{ratio if ratio else 0:6.2f} (target {target})")

    for key in () if a.long_only else ("smollm2", "gemma3"):
        path = os.path.join(ROOT, "models", cl.MODELS[key])
        ids_all = cl.prompt_ids(path, 4096)
        r = raw.setdefault(key, {})
        for n in (512, 4096):
            ids = ids_all[:n]
            dec = 128 if n == 512 else 1
            sp, sd = cl.bench_stride(cli, path, ids, dec, T, a.reps, None)
            lp, ld = cl.bench_llamacpp(path, ids, dec, T, a.reps)
            r[f"prefill@{n}"] = {"stride": sp, "llamacpp": lp}
            row(f"{key} prefill@{n} tok/s", sp, lp, 2.0, "tok/s vs llama.cpp")
            if n == 512:
                r["decode@512"] = {"stride": sd, "llamacpp": ld}
                row(f"{key} decode 128 after 512 tok/s", sd, ld, 1.5, "tok/s vs llama.cpp")
                mb = model_bytes(path)
                roof = mach["triad_gbs"] * 1e9 / mb
                r["model_bytes"] = mb
                row(f"{key} decode share of BW roofline", sd / roof, 1.0, 0.55,
                    "share", f"{mb / 1e6:.1f} MB/token, roofline {roof:.0f} tok/s; "
                    f"llama.cpp share {ld / roof:.2f}")
        # Thread scaling of prefill@512 (stride).
        s1, _ = cl.bench_stride(cli, path, ids_all[:512], 1, 1, a.reps, None)
        row(f"{key} prefill@512 scaling 1->{T} threads", r["prefill@512"]["stride"], s1, 1.8, "x")

    if not a.quick:
        path = os.path.join(ROOT, "models", cl.MODELS["smollm2"])
        ids_long = cl.prompt_ids(path, max(a.long, a.depth))
        # stride rswa at --long (prefill) with a few decode tokens at that depth.
        s_long = engine_run(bdir, path, ids_long[:a.long], RSWA, T, 32, kv_mb=512)
        raw["smollm2_long_stride"] = s_long
        # llama.cpp dense: measured at 4096 and --llama-long, extrapolated when shorter.
        t4 = llama_prefill(path, ids_long[:4096], T)
        tl = llama_prefill(path, ids_long[:a.llama_long], T)
        n1, n2 = 4096, a.llama_long
        bq = (tl / n2 - t4 / n1) / (n2 - n1)
        aq = t4 / n1 - bq * n1
        t_long = tl if n2 >= a.long else aq * a.long + bq * a.long ** 2
        extrap = n2 < a.long
        raw["smollm2_long_llamacpp"] = {"t4096": t4, f"t{n2}": tl, "t_long": t_long,
                                        "extrapolated": extrap, "fit_a": aq, "fit_b": bq}
        row(f"smollm2 prefill@{a.long} rswa vs llama dense", s_long["prefill_tok_s"],
            a.long / t_long, 5.0, "tok/s vs llama.cpp",
            f"llama.cpp {'extrapolated from 4096 and ' + str(n2) if extrap else 'measured'}; "
            f"llama.cpp measured {n2 / tl:.0f} tok/s at {n2}")
        # Decode at depth vs 1K (both rswa, same policy).
        if a.depth == a.long and a.depth_policy == RSWA:
            s_deep = s_long
        else:
            s_deep = engine_run(bdir, path, ids_long[:a.depth], a.depth_policy, T, 32, kv_mb=512)
        s_1k = engine_run(bdir, path, ids_long[:1024], a.depth_policy, T, 32, kv_mb=512, reps=a.reps)
        raw["smollm2_depth"] = {"policy": a.depth_policy, "deep": s_deep, "1k": s_1k}
        row(f"smollm2 decode depth {a.depth} vs 1K ({a.depth_policy})", s_deep["decode_tok_s"],
            s_1k["decode_tok_s"], 0.9, "ratio", f"peak KV {s_deep['peak_kv_bytes'] / 1e6:.0f} MB")

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()
    out = {"date": stamp, "loadavg": load, "threads": T, "reps": a.reps, "machine": mach,
           "rows": rows, "raw": raw}
    with open(os.path.join(a.out, "compare.json"), "w") as f:
        json.dump(out, f, indent=2)
    plot(rows, os.path.join(a.out, "compare.png"))
    md = [f"# stride vs llama.cpp ({stamp}, {T} threads, median of {a.reps}, loadavg "
          f"{load[0]:.1f})", "",
          f"Machine today: FMA peak {mach['fma_gflops']:.0f} GFLOP/s ({T} threads), "
          f"triad {mach['triad_gbs']:.1f} GB/s.", "",
          "| metric | stride | baseline | ratio | target | met | note |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['name']} | {r['value']:.2f} | {r['baseline'] or 0:.2f} | "
                  f"{r['ratio'] or 0:.2f} | {r['target']} | {'yes' if r['met'] else 'no'} | {r['note']} |")
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
