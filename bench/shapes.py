#!/usr/bin/env python3
"""stride vs llama.cpp's own llama-bench on realistic 1-8B model shapes (random weights).

Usage:
  ~/.cache/stride/venv/bin/python bench/shapes.py [--presets llama3.2-1b-q4_k_m ...]
      [--reps 3] [--threads 2] [--prompt 512] [--gen 128] [--triad-gbs G]
      [--llama-bench PATH] [--paths avx2 ...] [--shaped-dir DIR] [--out bench/out/shapes]

For each preset (default: the two 1-1.5B Q4_K_M ones; llama3.1-8b-q4_0 and qwen2.5-1.5b-q8_0 with --presets) the
GGUF of bench/make_shaped_gguf.py is made or reused, then reps alternate, in an order
rotated each rep, between
  * llama.cpp: `llama-bench -m F -p 512 -n 128 -t 2 -fa 0,1 -r 1 -o json` (its own warm-up
    runs included); for each of pp and tg the faster flash-attention setting counts,
    as llama.cpp's users would pick it;
  * stride on each kernel path `stride info --json` reports (STRIDE_CPU=avx2, avx512, amx):
    `stride run -m F --prompt-ids <512 random ids> -n 128 --temperature 0 --ignore-eos
    --json --threads 2`, after one untimed warm-up run per path.
Reported: medians over --reps of prefill and decode tok/s, stride / llama.cpp ratios,
decode bandwidth share = decode tok/s x weight bytes read per token / triad GB/s
(triad from machine_peak next to STRIDE_BIN, else --triad-gbs; the share can pass 1, as
triad counts 12 bytes per element without the write-allocate read and a read-only stream
runs faster), the decode GB/s itself, and peak RSS of each process (wait4's ru_maxrss;
stride's own peak_rss_bytes too) against the file size.
Note: llama-bench's tg128 decodes from an empty context, stride's decode follows the
512-token prompt (a few % more attention work for stride).
Writes OUT.json and OUT.png (ratios per preset and metric) and prints a markdown table.
Binaries: STRIDE_BIN (default build/stride), --baseline-bin (another stride build, run
alongside as "baseline-<path>"); llama-bench from --llama-bench, LLAMA_BENCH,
or scripts/build_llama_bench (cached).
AVX2-machine ratio on a newer CPU: build an AVX2-only llama-bench (CMAKE_ARGS="-DGGML_NATIVE=OFF
-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF" scripts/build_llama_bench)
and pass it with --llama-bench and --paths avx2.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import make_shaped_gguf as shaped  # noqa: E402

DEFAULT_PRESETS = ["llama3.2-1b-q4_k_m", "qwen2.5-1.5b-q4_k_m"]
LLAMA = "llama.cpp"


def log(*a):
    print(*a, flush=True)


def run_measured(cmd, env=None, timeout=1800):
    """Run CMD; return (stdout text, peak RSS bytes of that process). Raises on failure."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err,
                             stdin=subprocess.DEVNULL, env=env)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            out = p.stdout.read()
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
            p.stdout.close()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace")[-3000:]
            raise SystemExit(f"{' '.join(map(str, cmd[:4]))} ... exited {p.returncode}:\n{tail}")
    return out.decode("utf-8", "replace"), ru.ru_maxrss * 1024


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def git_commit():
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def find_llama_bench(arg):
    path = arg or os.environ.get("LLAMA_BENCH")
    if not path:
        res = subprocess.run([str(ROOT / "scripts" / "build_llama_bench")], stdout=subprocess.PIPE, text=True)
        if res.returncode != 0 or not res.stdout.strip():
            raise SystemExit("scripts/build_llama_bench failed (its error is above)")
        path = res.stdout.strip().splitlines()[-1]
    if not os.access(path, os.X_OK):
        raise SystemExit(f"llama-bench not found at {path}")
    return path


def stride_paths(binary):
    out = subprocess.run([binary, "info", "--json"], capture_output=True, text=True, check=True).stdout
    paths = json.loads(out)["cpu"]["supported_paths"]
    return [p for p in ("avx2", "avx512", "amx") if p in paths]


def triad_gbs(binary, threads, override):
    if override:
        return override, "--triad-gbs"
    mp = Path(binary).parent / "machine_peak"
    if not os.access(mp, os.X_OK):
        log(f"warning: {mp} missing and no --triad-gbs: no bandwidth shares")
        return None, None
    out = subprocess.run([str(mp), str(threads)], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["triad_gbs"]), str(mp)


def llama_bench_once(lb, model, a):
    out, rss = run_measured([lb, "-m", model, "-p", a.prompt, "-n", a.gen, "-t", a.threads,
                             "-fa", "0,1", "-r", "1", "-o", "json"])
    rows = json.loads(out[out.index("["):])
    res = {}
    for r in rows:
        kind = "pp" if int(r["n_prompt"]) > 0 and int(r["n_gen"]) == 0 else "tg"
        res[f"{kind}_fa{1 if int(r['flash_attn']) == 1 else 0}"] = float(r["avg_ts"])
    info = {k: rows[0].get(k) for k in ("build_commit", "build_number", "cpu_info", "model_type")}
    return res, rss, info


def stride_once(binary, path, model, ids, n_gen, threads):
    env = dict(os.environ, STRIDE_CPU=path)
    out, rss = run_measured([binary, "run", "-m", model, "--prompt-ids", " ".join(map(str, ids)),
                             "-n", n_gen, "--temperature", "0", "--seed", "0", "--ignore-eos",
                             "--json", "--threads", threads], env=env)
    j = json.loads(out.strip().splitlines()[-1])
    if int(j["generated_tokens"]) != n_gen:
        raise SystemExit(f"stride generated {j['generated_tokens']} tokens, asked for {n_gen}")
    return {"prefill": float(j["prefill_tok_s"]), "decode": float(j["decode_tok_s"]),
            "self_peak_rss": int(j.get("peak_rss_bytes", 0))}, rss


def bench_preset(preset, lb, sbin, paths, triad, a):
    """sbin runs as "stride-<path>"; a.baseline_bin, when set, as "baseline-<path>"."""
    model = shaped.ensure(preset, a.shaped_dir)
    cfg = shaped.PRESETS[preset]
    file_bytes = model.stat().st_size
    bpt = shaped.bytes_per_token(preset)
    ids = np.random.default_rng(1234).integers(259, cfg["n_vocab"], a.prompt).tolist()
    binaries = {f"stride-{p}": (sbin, p) for p in paths}
    if a.baseline_bin:
        binaries.update({f"baseline-{p}": (a.baseline_bin, p) for p in paths})
    names = [LLAMA] + list(binaries)
    for b, p in binaries.values():  # page in the file, first-touch the buffers
        stride_once(b, p, model, ids[:16], 2, a.threads)
    samples = {n: [] for n in names}
    rss = {n: [] for n in names}
    llama_info = {}
    for rep in range(a.reps):
        k = rep % len(names)
        for n in names[k:] + names[:k]:
            if n == LLAMA:
                r, m, llama_info = llama_bench_once(lb, model, a)
                log(f"  {preset} rep {rep + 1}: llama.cpp pp {r['pp_fa0']:.1f}/{r['pp_fa1']:.1f} "
                    f"tg {r['tg_fa0']:.2f}/{r['tg_fa1']:.2f} tok/s (fa 0/1), peak RSS {m / 1e9:.2f} GB")
            else:
                r, m = stride_once(*binaries[n], model, ids, a.gen, a.threads)
                log(f"  {preset} rep {rep + 1}: {n} prefill {r['prefill']:.1f} decode {r['decode']:.2f} "
                    f"tok/s, peak RSS {m / 1e9:.2f} GB")
            samples[n].append(r)
            rss[n].append(m)
    med = lambda n, key: statistics.median(s[key] for s in samples[n])  # noqa: E731
    lp = {f"fa{f}": med(LLAMA, f"pp_fa{f}") for f in (0, 1)}
    lt = {f"fa{f}": med(LLAMA, f"tg_fa{f}") for f in (0, 1)}
    lp_fa, lt_fa = max(lp, key=lp.get), max(lt, key=lt.get)
    engines = {LLAMA: {"prefill_tok_s": lp[lp_fa], "decode_tok_s": lt[lt_fa], "prefill_fa": lp_fa,
                       "decode_fa": lt_fa, "pp_tok_s_by_fa": lp, "tg_tok_s_by_fa": lt,
                       "peak_rss_bytes": max(rss[LLAMA]), **llama_info}}
    for n in names[1:]:
        engines[n] = {"prefill_tok_s": med(n, "prefill"), "decode_tok_s": med(n, "decode"),
                      "peak_rss_bytes": max(rss[n]),
                      "self_peak_rss_bytes": max(s["self_peak_rss"] for s in samples[n])}
    for n, e in engines.items():
        e["rss_over_file"] = e["peak_rss_bytes"] / file_bytes
        e["decode_gbs"] = e["decode_tok_s"] * bpt / 1e9
        e["decode_bw_share"] = e["decode_gbs"] / triad if triad else None
        if n != LLAMA:
            e["prefill_ratio"] = e["prefill_tok_s"] / engines[LLAMA]["prefill_tok_s"]
            e["decode_ratio"] = e["decode_tok_s"] / engines[LLAMA]["decode_tok_s"]
    return {"file": str(model), "file_bytes": file_bytes, "bytes_per_token": bpt,
            "shape": cfg, "engines": engines, "samples": samples, "rss_samples": rss}


def markdown(report):
    md = [f"# stride vs llama-bench on model shapes ({report['date']}, {report['cpu']}, "
          f"{report['threads']} threads, median of {report['reps']})", "",
          f"prompt {report['prompt_tokens']} tokens, {report['gen_tokens']} generated; "
          f"triad {report['triad_gbs'] or 0:.1f} GB/s; stride {report['git_commit'][:12]}, "
          f"llama.cpp {report.get('llama_build_commit') or '?'}", "",
          "| preset | engine | prefill tok/s | decode tok/s | prefill ratio | decode ratio | "
          "decode GB/s | decode BW share | peak RSS GB | RSS / file |", "|---|---|---|---|---|---|---|---|---|---|"]
    for preset, r in report["results"].items():
        for n, e in r["engines"].items():
            pr = f"{e['prefill_ratio']:.2f}" if "prefill_ratio" in e else "1"
            dr = f"{e['decode_ratio']:.2f}" if "decode_ratio" in e else "1"
            bw = f"{e['decode_bw_share']:.2f}" if e["decode_bw_share"] is not None else "-"
            eng = n + (f" (pp {e['prefill_fa']}, tg {e['decode_fa']})" if n == LLAMA else "")
            md.append(f"| {preset} | {eng} | {e['prefill_tok_s']:.1f} | {e['decode_tok_s']:.2f} | {pr} | "
                      f"{dr} | {e['decode_gbs']:.1f} | {bw} | {e['peak_rss_bytes'] / 1e9:.2f} | "
                      f"{e['rss_over_file']:.2f} |")
    return "\n".join(md)


def grouped_bars(path, groups, series, ylabel, title, unit_line=False):
    """One group of bars per name in GROUPS, one bar per (label, [value per group]) of
    SERIES, each labelled with its value; saved as PATH. unit_line: a dashed line at 1."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(max(7, 2.5 * len(groups) + 3), 4))
    width = 0.8 / max(1, len(series))
    for i, (label, vals) in enumerate(series):
        bars = ax.bar(np.arange(len(groups)) + i * width, vals, width, label=label)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    if unit_line:
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(groups)) + width * (len(series) - 1) / 2, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot(report, path):
    presets = list(report["results"])
    series = [(f"{n.split('-', 1)[1]} {m}", [report["results"][p]["engines"][n][f"{m}_ratio"] for p in presets])
              for n in report["results"][presets[0]]["engines"] if n != LLAMA for m in ("prefill", "decode")]
    grouped_bars(path, presets, series, "stride / llama.cpp (tok/s)",
                 f"stride vs llama-bench, {report['threads']} threads, {report['cpu']}", unit_line=True)


def write_report(report, out, plot_fn, markdown_fn):
    """OUT.json and OUT.png (plot_fn), and the markdown table (markdown_fn) on stdout."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out + ".json").write_text(json.dumps(report, indent=1) + "\n")
    plot_fn(report, out + ".png")
    print(markdown_fn(report))
    log(f"wrote {out}.json and {out}.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=DEFAULT_PRESETS, choices=list(shaped.PRESETS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--triad-gbs", type=float, default=None, help="when machine_peak is missing")
    ap.add_argument("--llama-bench", default=None)
    ap.add_argument("--baseline-bin", default=None,
                    help="a second stride binary (e.g. an older build), run on the same paths alongside")
    ap.add_argument("--paths", nargs="+", default=None, choices=["avx2", "avx512", "amx"],
                    help="stride paths to run (default: every path the CPU supports); e.g. --paths avx2 "
                         "with an AVX2-only llama-bench measures the AVX2-machine ratio on a newer CPU")
    ap.add_argument("--shaped-dir", default=str(shaped.DEFAULT_OUT))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "shapes"))
    a = ap.parse_args()

    sbin = os.environ.get("STRIDE_BIN", str(ROOT / "build" / "stride"))
    if not os.access(sbin, os.X_OK):
        raise SystemExit(f"stride binary not found at {sbin} (set STRIDE_BIN)")
    lb = find_llama_bench(a.llama_bench)
    paths = stride_paths(sbin)
    if a.paths:
        missing = [p for p in a.paths if p not in paths]
        if missing:
            raise SystemExit(f"this CPU cannot run stride path(s) {', '.join(missing)} (it runs {', '.join(paths)})")
        paths = [p for p in paths if p in a.paths]
    triad, triad_src = triad_gbs(sbin, a.threads, a.triad_gbs)
    log(f"stride {sbin} (paths {', '.join(paths)}), llama-bench {lb}, triad {triad} GB/s")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "cpu": cpu_model(), "git_commit": git_commit(), "stride_bin": sbin, "llama_bench": lb,
              "threads": a.threads, "prompt_tokens": a.prompt, "gen_tokens": a.gen, "reps": a.reps,
              "triad_gbs": triad, "triad_source": triad_src, "loadavg": os.getloadavg(),
              "statistic": "median", "results": {}}
    for preset in a.presets:
        report["results"][preset] = bench_preset(preset, lb, sbin, paths, triad, a)
        report["llama_build_commit"] = report["results"][preset]["engines"][LLAMA].get("build_commit")
    write_report(report, a.out, plot, markdown)


if __name__ == "__main__":
    main()
