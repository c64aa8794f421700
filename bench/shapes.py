#!/usr/bin/env python3
"""stride vs llama-bench of mainline llama.cpp and of ik_llama.cpp on realistic 1-8B model shapes (random weights).

Usage:
  ~/.cache/stride/venv/bin/python bench/shapes.py [--presets llama3.2-1b-q4_k_m ...]
      [--reps 3] [--threads 2] [--prompt 512] [--gen 128] [--triad-gbs G] [--no-ik] [--no-anchors]
      [--llama-bench PATH] [--ik-llama-bench PATH] [--paths avx2 ...] [--shaped-dir DIR]
      [--out bench/out/shapes]

For each preset (default: the two 1-1.5B Q4_K_M ones; llama3.1-8b-q4_0 and qwen2.5-1.5b-q8_0 with --presets) the
GGUF of bench/make_shaped_gguf.py is made or reused, then reps alternate, in an order
rotated each rep, between
  * the two anchors (bench/anchors.py): `llama-bench -m F -p 512 -n 128 -t 2 -fa 0,1 -r 1 -o json`
    (its own warm-up runs included) of mainline llama.cpp, and of ik_llama.cpp twice, with
    run-time repacking `-rtr 1` and `-rtr 0`; for each of pp and tg the fastest (rtr, flash
    attention) setting counts, as each engine's users would pick it (--no-ik: mainline only;
    --no-anchors: neither, for comparing stride's paths and builds on a busy machine);
  * stride on each kernel path `stride info --json` reports (STRIDE_CPU=avx2, avx512, amx):
    `stride run -m F --prompt-ids <512 random ids> -n 128 --temperature 0 --ignore-eos
    --json --threads 2`, after one untimed warm-up run per path.
Reported: medians over --reps of prefill and decode tok/s, stride's ratios against each anchor,
decode bandwidth share = decode tok/s x weight bytes read per token / triad GB/s
(triad from machine_peak next to STRIDE_BIN, else --triad-gbs; the share can pass 1, as
triad counts 12 bytes per element without the write-allocate read and a read-only stream
runs faster), the decode GB/s itself, and peak RSS of each process (wait4's ru_maxrss;
stride's own peak_rss_bytes too) against the file size.
Note: the anchors' decode runs after the prompt, as stride's does (ik's -gp 512,128, mainline's
-d 0,512): at 512 tokens of context attention is about 8% of a Qwen2.5-1.5B-shape decode step in
both engines. --anchor-decode-from-empty runs their plain tg128 (an empty context) instead.
Writes OUT.json and OUT.png (ratios per preset, metric and anchor) and prints a markdown table.
Binaries: STRIDE_BIN (default build/stride), --baseline-bin (another stride build, run
alongside as "baseline-<path>"); mainline's llama-bench from --llama-bench, LLAMA_BENCH or
scripts/build_llama_bench, ik's from --ik-llama-bench, IK_LLAMA_BENCH or
scripts/build_ik_llama_bench (both cached after the first build).
AVX2-machine ratio on a newer CPU: build AVX2-only anchors (CMAKE_ARGS="-DGGML_NATIVE=OFF
-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF" scripts/build_llama_bench,
IK_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" scripts/build_ik_llama_bench,
or --ik-avx2, which builds and caches ik's) and pass them with --llama-bench, --ik-llama-bench and --paths avx2.
bench/prefill_cpu.py compares CPU time per prefill token instead, for a loaded machine.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import anchors  # noqa: E402
import make_shaped_gguf as shaped  # noqa: E402
from anchors import IK, MAINLINE as LLAMA  # noqa: E402
from measured import run_measured  # noqa: E402

DEFAULT_PRESETS = ["llama3.2-1b-q4_k_m", "qwen2.5-1.5b-q4_k_m"]


def log(*a):
    print(*a, flush=True)


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


def anchor_tests(a):
    """Per anchor engine, its llama-bench test args and {figure: test name}. Stride decodes after
    the prompt, so by default the anchors' decode also runs with a.prompt tokens in the KV cache
    (ik's -gp P,G: "tgG@ppP"; mainline's -d 0,P: "tgG@dP", which adds a pp at that depth too);
    --anchor-decode-from-empty measures their tgG from an empty cache instead."""
    p, g = a.prompt, a.gen
    if a.anchor_decode_from_empty:
        both = (["-p", p, "-n", g], {"prefill": f"pp{p}", "decode": f"tg{g}"})
        return {LLAMA: both[0], IK: both[0]}, {LLAMA: both[1], IK: both[1]}
    tests = {LLAMA: ["-p", p, "-n", g, "-d", f"0,{p}"], IK: ["-p", p, "-n", 0, "-gp", f"{p},{g}"]}
    metrics = {LLAMA: {"prefill": f"pp{p}", "decode": f"tg{g}@d{p}"},
               IK: {"prefill": f"pp{p}", "decode": f"tg{g}@pp{p}"}}
    return tests, metrics


def bench_preset(preset, anchor_bins, sbin, paths, triad, a):
    """sbin runs as "stride-<path>"; a.baseline_bin, when set, as "baseline-<path>";
    ANCHOR_BINS: {anchor engine: its llama-bench}."""
    model = shaped.ensure(preset, a.shaped_dir)
    cfg = shaped.PRESETS[preset]
    file_bytes = model.stat().st_size
    bpt = shaped.bytes_per_token(preset)
    ids = np.random.default_rng(1234).integers(259, cfg["n_vocab"], a.prompt).tolist()
    binaries = {f"stride-{p}": (sbin, p) for p in paths}
    if a.baseline_bin:
        binaries.update({f"baseline-{p}": (a.baseline_bin, p) for p in paths})
    units = anchors.units(anchor_bins)
    names = list(units) + list(binaries)
    for b, p in binaries.values():  # page in the file, first-touch the buffers
        stride_once(b, p, model, ids[:16], 2, a.threads)
    samples = {n: [] for n in names}
    rss = {n: [] for n in names}
    info = {}
    tests, metrics = anchor_tests(a)
    for rep in range(a.reps):
        k = rep % len(names)
        for n in names[k:] + names[:k]:
            if n in units:
                eng, lb, extra = units[n]
                r, m, info[eng] = anchors.llama_bench_once(lb, model, tests[eng], a.threads, extra)
                log(f"  {preset} rep {rep + 1}: {n} {anchors.describe(r)} tok/s, peak RSS {m / 1e9:.2f} GB")
            else:
                r, m = stride_once(*binaries[n], model, ids, a.gen, a.threads)
                log(f"  {preset} rep {rep + 1}: {n} prefill {r['prefill']:.1f} decode {r['decode']:.2f} "
                    f"tok/s, peak RSS {m / 1e9:.2f} GB")
            samples[n].append(r)
            rss[n].append(m)
    med = lambda n, key: statistics.median(s[key] for s in samples[n])  # noqa: E731
    engines = {}
    for eng in anchor_bins:
        mine = [u for u in units if units[u][0] == eng]
        engines[eng] = {**anchors.summarize(eng, {u: samples[u] for u in mine}, metrics[eng]),
                        "peak_rss_bytes": max(max(rss[u]) for u in mine),
                        "peak_rss_bytes_by_unit": {u: max(rss[u]) for u in mine}, **info[eng]}
    for n in binaries:
        engines[n] = {"prefill_tok_s": med(n, "prefill"), "decode_tok_s": med(n, "decode"),
                      "peak_rss_bytes": max(rss[n]),
                      "self_peak_rss_bytes": max(s["self_peak_rss"] for s in samples[n])}
    anchor_figs = {e: engines[e] for e in anchor_bins}
    for n, e in engines.items():
        e["rss_over_file"] = e["peak_rss_bytes"] / file_bytes
        e["decode_gbs"] = e["decode_tok_s"] * bpt / 1e9
        e["decode_bw_share"] = e["decode_gbs"] / triad if triad else None
        if n in binaries:  # prefill_ratio/decode_ratio: against mainline; *_ratio_ik: against ik
            for fig in ("prefill", "decode"):
                for anchor, ratio in anchors.ratios(e[f"{fig}_tok_s"], anchor_figs, fig).items():
                    e[f"{fig}_ratio" + ("_ik" if anchor == IK else "")] = ratio
    return {"file": str(model), "file_bytes": file_bytes, "bytes_per_token": bpt,
            "shape": cfg, "engines": engines, "samples": samples, "rss_samples": rss}


def markdown(report):
    has_ik = any(IK in r["engines"] for r in report["results"].values())
    md = [f"# stride vs llama-bench on model shapes ({report['date']}, {report['cpu']}, "
          f"{report['threads']} threads, median of {report['reps']}, loadavg {report['loadavg'][0]:.1f})", "",
          f"prompt {report['prompt_tokens']} tokens, {report['gen_tokens']} generated; "
          f"triad {report['triad_gbs'] or 0:.1f} GB/s; stride {report['git_commit'][:12]}, "
          f"llama.cpp {report.get('llama_build_commit') or '?'}"
          + (f", ik_llama.cpp {report.get('ik_build_commit') or '?'}" if has_ik else ""), "",
          "ratios: stride / anchor; an anchor's figure is its fastest setting (flash attention, ik's -rtr)", "",
          "| preset | engine | prefill tok/s | decode tok/s | prefill / llama.cpp | decode / llama.cpp | "
          + ("prefill / ik | decode / ik | " if has_ik else "")
          + "decode GB/s | decode BW share | peak RSS GB | RSS / file |",
          "|---|---|---|---|---|---|" + ("---|---|" if has_ik else "") + "---|---|---|---|"]
    fmt = lambda e, k: f"{e[k]:.2f}" if k in e else "-"  # noqa: E731
    for preset, r in report["results"].items():
        for n, e in r["engines"].items():
            bw = f"{e['decode_bw_share']:.2f}" if e["decode_bw_share"] is not None else "-"
            eng = n + (f" (pp {e['prefill_setting']}, tg {e['decode_setting']})" if "prefill_setting" in e else "")
            ik_cols = f"{fmt(e, 'prefill_ratio_ik')} | {fmt(e, 'decode_ratio_ik')} | " if has_ik else ""
            md.append(f"| {preset} | {eng} | {e['prefill_tok_s']:.1f} | {e['decode_tok_s']:.2f} | "
                      f"{fmt(e, 'prefill_ratio')} | {fmt(e, 'decode_ratio')} | {ik_cols}"
                      f"{e['decode_gbs']:.1f} | {bw} | {e['peak_rss_bytes'] / 1e9:.2f} | {e['rss_over_file']:.2f} |")
    md += ["", "Anchor settings (median tok/s of each):"]
    for preset, r in report["results"].items():
        for n, e in r["engines"].items():
            for fig in ("prefill", "decode"):
                by = e.get(f"{fig}_tok_s_by_setting")
                if by:
                    md.append(f"- {preset} {n} {fig}: " + ", ".join(f"{k} {v:.2f}" for k, v in by.items()))
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
    first = report["results"][presets[0]]["engines"]
    if LLAMA not in first:  # --no-anchors: tok/s per stride binary and path
        series = [(f"{n} {m}", [report["results"][p]["engines"][n][f"{m}_tok_s"] for p in presets])
                  for n in first for m in ("prefill", "decode")]
        grouped_bars(path, presets, series, "tok/s", f"stride, {report['threads']} threads, {report['cpu']}")
        return
    suffixes = [("", LLAMA)] + ([("_ik", "ik")] if IK in first else [])
    series = [(f"{n.split('-', 1)[1]} {m} / {label}",
               [report["results"][p]["engines"][n][f"{m}_ratio{sfx}"] for p in presets])
              for n in first if n not in anchors.ENGINES for m in ("prefill", "decode") for sfx, label in suffixes]
    grouped_bars(path, presets, series, "stride / anchor (tok/s)",
                 f"stride vs llama-bench of llama.cpp{' and ' + IK if len(suffixes) > 1 else ''}\n"
                 f"{report['threads']} threads, {report['cpu']}", unit_line=True)


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
    ap.add_argument("--anchor-decode-from-empty", action="store_true",
                    help="the anchors' decode from an empty KV cache (llama-bench's plain tgN), not after the prompt")
    ap.add_argument("--triad-gbs", type=float, default=None, help="when machine_peak is missing")
    ap.add_argument("--llama-bench", default=None, help="mainline llama.cpp's llama-bench")
    ap.add_argument("--ik-llama-bench", default=None, help="ik_llama.cpp's llama-bench")
    ap.add_argument("--no-ik", action="store_true", help="mainline llama.cpp as the only anchor (quick runs)")
    ap.add_argument("--ik-avx2", action="store_true",
                    help="ik_llama.cpp built AVX2-only (anchors.IK_AVX2_CMAKE_ARGS, built on first use), "
                         "for --paths avx2 on a CPU with more")
    ap.add_argument("--no-anchors", action="store_true",
                    help="stride only (its paths, and --baseline-bin): no ratios, tok/s plotted instead")
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
    paths = stride_paths(sbin)
    if a.paths:
        missing = [p for p in a.paths if p not in paths]
        if missing:
            raise SystemExit(f"this CPU cannot run stride path(s) {', '.join(missing)} (it runs {', '.join(paths)})")
        paths = [p for p in paths if p in a.paths]
    anchor_bins = ({} if a.no_anchors else
                   anchors.find_binaries(a.llama_bench, a.ik_llama_bench, not a.no_ik, a.ik_avx2))
    triad, triad_src = triad_gbs(sbin, a.threads, a.triad_gbs)
    log(f"stride {sbin} (paths {', '.join(paths)}), llama-bench {anchor_bins}, triad {triad} GB/s")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "cpu": cpu_model(), "git_commit": git_commit(), "stride_bin": sbin,
              "llama_bench": anchor_bins.get(LLAMA), "ik_llama_bench": anchor_bins.get(IK),
              "threads": a.threads, "prompt_tokens": a.prompt, "gen_tokens": a.gen, "reps": a.reps,
              "triad_gbs": triad, "triad_source": triad_src, "loadavg": os.getloadavg(),
              "statistic": "median", "results": {}}
    for preset in a.presets:
        report["results"][preset] = bench_preset(preset, anchor_bins, sbin, paths, triad, a)
        engines = report["results"][preset]["engines"]
        report["llama_build_commit"] = engines.get(LLAMA, {}).get("build_commit")
        if IK in engines:
            report["ik_build_commit"] = engines[IK].get("build_commit")
    write_report(report, a.out, plot, markdown)


if __name__ == "__main__":
    main()
