#!/usr/bin/env python3
"""Start-up: how long stride and llama.cpp take from opening a GGUF to the first token.

Usage:
  ~/.cache/stride/venv/bin/python bench/load_time.py [--presets llama3.2-1b-q4_k_m ...]
      [--reps 5] [--threads 2] [--shaped-dir DIR] [--out bench/out/load_time]

For each preset (the shaped GGUFs of bench/make_shaped_gguf.py, made or reused),
rounds alternate, in an order rotated each round, between
  * llama.cpp: llama-cpp-python (the same vendored llama.cpp that the oracles use, with
    its CPU weight repacking) in a fresh process: `Llama(model_path=F, n_threads=T,
    n_ctx=512)` timed as load, then `eval([1])` as the first token;
  * stride: `stride run -m F --prompt-ids 1 -n 1 --threads T --json` in a fresh process,
    its `load_seconds` (Engine::create: map, repack, KV pool) and `prefill_seconds`;
    with --threads 1 and T, and with STRIDE_NO_REPACK=1 (computing from the mapped
    file, no repacking) as a reference.
Both figures are timed inside the process, so interpreter and exec start-up are out.
Reported: medians over --reps of load, first token and their sum ("ready"), the ratio
llama.cpp ready / stride ready (above 1: stride is ready sooner), and each process's
peak RSS (wait4's ru_maxrss). The page cache is warm for both (every round reads the
same file). Writes OUT.json and OUT.png and prints a markdown table.
Binary: STRIDE_BIN (default build/stride).
"""
import argparse
import datetime
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import make_shaped_gguf as shaped  # noqa: E402
from shapes import cpu_model, git_commit, grouped_bars, log, run_measured, write_report  # noqa: E402

LLAMA = "llama.cpp"

LLAMA_SNIPPET = r"""
import json, sys, time
from llama_cpp import Llama
path, threads = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
llm = Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=512, verbose=False)
t1 = time.perf_counter()
llm.eval([1])
t2 = time.perf_counter()
print(json.dumps({"load_seconds": t1 - t0, "first_token_seconds": t2 - t1}))
"""


def llama_once(model, threads):
    out, rss = run_measured([sys.executable, "-c", LLAMA_SNIPPET, model, str(threads)])
    j = json.loads(out.strip().splitlines()[-1])
    return j["load_seconds"], j["first_token_seconds"], rss


def stride_once(binary, model, threads, no_repack):
    env = dict(os.environ)
    env.pop("STRIDE_NO_REPACK", None)
    if no_repack:
        env["STRIDE_NO_REPACK"] = "1"
    out, rss = run_measured([binary, "run", "-m", model, "--prompt-ids", "1", "-n", "1", "--temperature", "0",
                             "--json", "--threads", str(threads)], env=env)
    j = json.loads(out.strip().splitlines()[-1])
    return j["load_seconds"], j["prefill_seconds"], rss


def engines(threads):
    """name -> how to run one round of it."""
    e = {LLAMA: lambda b, m: llama_once(m, threads),
         "stride-t1": lambda b, m: stride_once(b, m, 1, False)}
    if threads != 1:
        e[f"stride-t{threads}"] = lambda b, m: stride_once(b, m, threads, False)
    e[f"stride-t{threads}-no-repack"] = lambda b, m: stride_once(b, m, threads, True)
    return e


def bench_preset(preset, sbin, a):
    model = str(shaped.ensure(preset, out_dir=Path(a.shaped_dir)))
    file_bytes = os.path.getsize(model)
    runs = engines(a.threads)
    names = list(runs)
    samples = {n: [] for n in names}
    for name in names:  # one untimed round each: the page cache holds the file for all
        runs[name](sbin, model)
    for rep in range(a.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            load, first, rss = runs[name](sbin, model)
            samples[name].append({"load_seconds": load, "first_token_seconds": first, "peak_rss_bytes": rss})
            log(f"  {preset} rep {rep + 1}: {name} load {load:.2f} s, first token {first:.3f} s, "
                f"peak RSS {rss / 1e9:.2f} GB")
    res = {"file_bytes": file_bytes, "engines": {}}
    for name in names:
        s = samples[name]
        med = {k: statistics.median(x[k] for x in s) for k in s[0]}
        med["ready_seconds"] = statistics.median(x["load_seconds"] + x["first_token_seconds"] for x in s)
        med["ready_range"] = [min(x["load_seconds"] + x["first_token_seconds"] for x in s),
                              max(x["load_seconds"] + x["first_token_seconds"] for x in s)]
        med["rss_over_file"] = med["peak_rss_bytes"] / file_bytes
        med["samples"] = s
        res["engines"][name] = med
    base = res["engines"][LLAMA]["ready_seconds"]
    for name, e in res["engines"].items():
        if name != LLAMA:
            e["ready_ratio"] = base / e["ready_seconds"] if e["ready_seconds"] > 0 else None
    return res


def markdown(report):
    md = [f"# Start-up: stride vs llama.cpp ({report['date']}, {report['cpu']}, {report['threads']} threads, "
          f"median of {report['reps']})", "",
          "ready = load + first token, timed inside each process; ratio = llama.cpp ready / stride ready", "",
          "| preset | engine | load s | first token s | ready s (range) | ratio | peak RSS GB | RSS / file |",
          "|---|---|---|---|---|---|---|---|"]
    for preset, r in report["results"].items():
        for n, e in r["engines"].items():
            ratio = f"{e['ready_ratio']:.2f}" if "ready_ratio" in e else "1"
            lo, hi = e["ready_range"]
            md.append(f"| {preset} | {n} | {e['load_seconds']:.2f} | {e['first_token_seconds']:.3f} | "
                      f"{e['ready_seconds']:.2f} ({lo:.2f}-{hi:.2f}) | {ratio} | {e['peak_rss_bytes'] / 1e9:.2f} | "
                      f"{e['rss_over_file']:.2f} |")
    return "\n".join(md)


def plot(report, path):
    presets = list(report["results"])
    series = [(n, [report["results"][p]["engines"][n]["ready_seconds"] for p in presets])
              for n in report["results"][presets[0]]["engines"]]
    grouped_bars(path, presets, series, "seconds to the first token (median)",
                 f"start-up, {report['threads']} threads, {report['cpu']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["llama3.2-1b-q4_k_m"], choices=list(shaped.PRESETS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shaped-dir", default=str(shaped.DEFAULT_OUT))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "load_time"))
    a = ap.parse_args()
    if a.reps < 1 or a.threads < 1:
        ap.error("--reps and --threads must be at least 1")

    sbin = os.environ.get("STRIDE_BIN", str(ROOT / "build" / "stride"))
    if not os.access(sbin, os.X_OK):
        raise SystemExit(f"stride binary not found at {sbin} (set STRIDE_BIN)")
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise SystemExit("llama_cpp is not importable: run with the test venv (~/.cache/stride/venv/bin/python)")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "cpu": cpu_model(), "git_commit": git_commit(), "stride_bin": sbin, "threads": a.threads,
              "reps": a.reps, "loadavg": os.getloadavg(), "statistic": "median", "results": {}}
    for preset in a.presets:
        report["results"][preset] = bench_preset(preset, sbin, a)
    write_report(report, a.out, plot, markdown)


if __name__ == "__main__":
    main()
