#!/usr/bin/env python3
"""Issue-5 table: stride vs llama.cpp and ik_llama.cpp on this machine, side by side, in one run.

Usage (one command; figures are medians over --reps):
  nice -n -5 ~/.cache/stride/venv/bin/python bench/compare.py [--reps 3] [--threads 2]
      [--long 32768] [--depth 131072] [--llama-long 8192] [--quick | --long-only]
      [--models smollm2 gemma3] [--no-ik] [--ik-llama-bench PATH] [--out bench/out]

Measures, with today's machine figures from bench/micro/machine_peak.cpp:
  * prefill tok/s at 512 and 4096 prompt tokens, the real models (--models), and decode tok/s
    (128 tokens after 512), stride against two anchors, reps interleaved (the engine order
    rotates each rep): mainline llama.cpp through llama-cpp-python (bench/compare_llamacpp.py's
    harness, flash attention off and on) and ik_llama.cpp's llama-bench (bench/anchors.py:
    `-p 512,4096 -n 0 -gp 512,128`, run-time repacking `-rtr 1` and `-rtr 0`, flash attention
    off and on; --no-ik leaves it out); per metric an anchor's fastest setting counts;
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
Binaries: STRIDE_BIN (default build/stride); machine_peak and bench_engine next to it; ik's
llama-bench from --ik-llama-bench, IK_LLAMA_BENCH or scripts/build_ik_llama_bench (cached).
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
import anchors  # noqa: E402
import compare_llamacpp as cl  # noqa: E402
from anchors import IK, MAINLINE  # noqa: E402
from stride_cli import StrideCli  # noqa: E402

RSWA = "rswa:sinks=4,window=4092"
# Decode at depth vs 1K compares equal work: a window that 1K tokens already
# fill, so both points read S + W keys and only the depth differs.
DEPTH_RSWA = "rswa:sinks=4,window=1020"
ANCHOR_KEYS = {MAINLINE: "llamacpp", IK: "ik_llama_cpp"}  # their names in the JSON's raw figures
# The short rows' figures, named by llama-bench's tests; ik's llama-bench runs all three at once.
SHORT = {"prefill@512": "pp512", "decode@512": "tg128@pp512", "prefill@4096": "pp4096"}
IK_TESTS = ["-p", "512,4096", "-n", "0", "-gp", "512,128"]


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


def short_runs(cli, path, ids_all, threads, reps, ik_bin, log):
    """Interleaved reps of stride, mainline (llama-cpp-python, flash attention off and on) and, with
    IK_BIN, ik's llama-bench units, at 512 and 4096 prompt tokens. Returns (stride's medians per
    SHORT figure, {anchor: anchors.summarize(...)}, the samples)."""
    sessions = {}  # (prompt length, fa) -> warmed llama-cpp-python context

    def stride_once():
        res = {}
        for n, dec in ((512, 128), (4096, 1)):
            out = cli.run(path, ids_all[:n], dec, threads=threads)
            assert out["generated_tokens"] == dec, out
            res[f"pp{n}"] = float(out["prefill_tok_s"])
            if n == 512:
                res["tg128@pp512"] = float(out["decode_tok_s"])
        return res

    def mainline_once():
        res = {}
        for fa in (0, 1):
            for n, dec in ((512, 128), (4096, 0)):
                if (n, fa) not in sessions:
                    sessions[n, fa] = cl.llamacpp_session(path, ids_all[:n], n + dec + 16, threads, bool(fa))
                res[f"pp{n}_fa{fa}"], d = cl.llamacpp_once(sessions[n, fa], ids_all[:n], dec)
                if dec:
                    res[f"tg128@pp512_fa{fa}"] = d
        return res

    units = {"stride": stride_once, MAINLINE: mainline_once}
    for u, (_, _, extra) in (anchors.units({IK: ik_bin}) if ik_bin else {}).items():
        units[u] = lambda extra=extra: anchors.llama_bench_once(ik_bin, path, IK_TESTS, threads, extra)[0]
    cli.run(path, ids_all[:16], 1, threads=threads)  # stride warm-up (page cache)
    samples = {u: [] for u in units}
    names = list(units)
    for rep in range(reps):
        k = rep % len(names)
        for u in names[k:] + names[:k]:
            samples[u].append(units[u]())
            r = samples[u][-1]
            log(f"  rep {rep + 1}: {u} " + (" ".join(f"{t} {v:.1f}" for t, v in r.items()) if u == "stride"
                                            else anchors.describe(r)) + " tok/s")
    stride = {m: statistics.median(s[t] for s in samples["stride"]) for m, t in SHORT.items()}
    figs = {e: anchors.summarize(e, {u: samples[u] for u in names if u != "stride"}, SHORT)
            for e in ((MAINLINE, IK) if ik_bin else (MAINLINE,))}
    return stride, figs, samples


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
    ap.add_argument("--models", nargs="+", default=list(cl.MODELS), choices=list(cl.MODELS),
                    help="real models of the short rows")
    ap.add_argument("--no-ik", action="store_true", help="mainline llama.cpp as the only anchor (quick runs)")
    ap.add_argument("--ik-llama-bench", default=None, help="ik_llama.cpp's llama-bench")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    a = ap.parse_args()
    bdir = build_dir()
    ik_bin = None if a.no_ik or a.long_only else anchors.built_binary(a.ik_llama_bench, "IK_LLAMA_BENCH",
                                                                      "build_ik_llama_bench")
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

    for key in () if a.long_only else a.models:
        path = os.path.join(ROOT, "models", cl.MODELS[key])
        ids_all = cl.prompt_ids(path, 4096)
        r = raw.setdefault(key, {})
        st, figs, r["samples"] = short_runs(cli, path, ids_all, T, a.reps, ik_bin, log)
        r["anchors"] = figs
        mb = model_bytes(path)
        roof = mach["triad_gbs"] * 1e9 / mb
        r["model_bytes"] = mb
        targets = {MAINLINE: {"prefill": 2.0, "decode": 1.5}, IK: {"prefill": 1.3, "decode": 1.0}}
        for m, label in (("prefill@512", "prefill@512 tok/s"), ("decode@512", "decode 128 after 512 tok/s"),
                         ("prefill@4096", "prefill@4096 tok/s")):
            r[m] = {"stride": st[m], **{ANCHOR_KEYS[e]: f[f"{m}_tok_s"] for e, f in figs.items()}}
            for e, f in figs.items():
                row(f"{key} {label}" + ("" if e == MAINLINE else f" vs {IK}"), st[m], f[f"{m}_tok_s"],
                    targets[e][m.split("@")[0]], f"tok/s vs {e}", f"{e} {f[m + '_setting']}")
            if m == "decode@512":
                shares = "; ".join(f"{e} share {f['decode@512_tok_s'] / roof:.2f}" for e, f in figs.items())
                row(f"{key} decode share of BW roofline", st[m] / roof, 1.0, 0.55,
                    "share", f"{mb / 1e6:.1f} MB/token, roofline {roof:.0f} tok/s; {shares}")
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
    out = {"date": stamp, "loadavg": load, "threads": T, "reps": a.reps, "machine": mach, "ik_llama_bench": ik_bin,
           "rows": rows, "raw": raw}
    with open(os.path.join(a.out, "compare.json"), "w") as f:
        json.dump(out, f, indent=2)
    plot(rows, os.path.join(a.out, "compare.png"))
    md = [f"# stride vs llama.cpp{' and ' + IK if ik_bin else ''} ({stamp}, {T} threads, median of {a.reps}, loadavg "
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
