#!/usr/bin/env python3
"""CPU milliseconds per prefill token: stride on one kernel path against llama-bench anchors.

On a shared, loaded machine wall-clock tok/s measures the neighbours; the CPU time a process
spends (wait4's user + system time) does not, to first order. --user-only counts user time alone:
the system time a loaded machine adds (page faults, scheduling, reclaim) is noise to a kernel A/B,
which changes no system work. Each figure is a difference of two runs of the same binary, so that
loading, repacking and warm-up drop out:
  * stride: `stride run -m F --prompt-ids <P ids> -n 1 --threads T` (STRIDE_CPU=PATH) minus the
    same with a P0-token prompt: the CPU time of P - P0 prefill tokens;
  * llama-bench: `-p P -n 0 -r 2` minus `-r 1` (same -fa, same -rtr): one P-token prompt
    (llama-bench's warm-up prompt runs in both).
Units run interleaved, in an order rotated each rep, so that a change of load hits every unit
alike. A unit's figure is min-of-N: the least CPU time of its long runs minus the least of its
short runs over --reps (interference only ever adds CPU time, so each minimum is the run nearest
the unit's own cost; the median of the per-rep differences is kept in the JSON too). An anchor's
figure is its fastest setting (flash attention off or on; ik's -rtr 1), as its users would pick it.

  ~/.cache/stride/venv/bin/python bench/prefill_cpu.py [--ik-avx2 | --ik-llama-bench PATH] [--llama-bench PATH]
      [--stride build/stride] [--baseline-bin PATH] [--path avx2] [--presets ...] [--reps 3]
      [--threads 1] [--prompt 512] [--short-prompt 32] [--user-only] [--out bench/out/prefill_cpu]

--ik-avx2 takes ik's AVX2-only build (built and cached on first use, as bench/shapes.py --ik-avx2),
to compare the AVX2 paths on a CPU that has more.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import anchors  # noqa: E402
import make_shaped_gguf as shaped  # noqa: E402


def cpu_seconds(cmd, env=None, user_only=False):
    """Run CMD; return (stdout, its user + system CPU seconds, or user only). Raises on failure."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err,
                             stdin=subprocess.DEVNULL, env=env)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.stdout.close()
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(map(str, cmd[:4]))} ... failed:\n"
                             + err.read().decode("utf-8", "replace")[-2000:])
    return out.decode("utf-8", "replace"), ru.ru_utime + (0.0 if user_only else ru.ru_stime)


def stride_secs(binary, path, model, ids, short, threads, user_only):
    """CPU seconds of stride's long-prompt run and short-prompt run, and the prefill tokens between."""
    env = dict(os.environ, STRIDE_CPU=path)
    secs = []
    for n in (len(ids), short):
        _, s = cpu_seconds([binary, "run", "-m", model, "--prompt-ids", " ".join(map(str, ids[:n])), "-n", 1,
                            "--temperature", 0, "--ignore-eos", "--json", "--threads", threads], env, user_only)
        secs.append(s)
    return secs[0], secs[1], len(ids) - short


def llama_bench_secs(binary, model, prompt, threads, extra, user_only):
    """CPU seconds of llama-bench with two reps and with one, and the prefill tokens between."""
    secs = []
    for reps in (2, 1):
        _, s = cpu_seconds([binary, "-m", model, "-p", prompt, "-n", 0, "-t", threads, "-r", reps,
                            "-o", "json", *extra], user_only=user_only)
        secs.append(s)
    return secs[0], secs[1], prompt


def ms_per_token(runs):
    """Min-of-N CPU ms per prefill token from [(long s, short s, tokens)]: least long minus least short."""
    return 1e3 * (min(r[0] for r in runs) - min(r[1] for r in runs)) / runs[0][2]


def units(a):
    """name -> (kind, binary, extra llama-bench args or stride path)."""
    u = {f"stride-{a.path}": ("stride", a.stride, a.path)}
    if a.baseline_bin:
        u[f"baseline-{a.path}"] = ("stride", a.baseline_bin, a.path)
    for fa in (0, 1):
        if a.ik_llama_bench:
            u[f"ik_llama.cpp -rtr 1 fa{fa}"] = ("llama-bench", a.ik_llama_bench, ["-fa", fa, "-rtr", 1])
        if a.llama_bench:
            u[f"llama.cpp fa{fa}"] = ("llama-bench", a.llama_bench, ["-fa", fa])
    return u


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["llama3.2-1b-q4_k_m", "qwen2.5-1.5b-q4_k_m"],
                    choices=sorted(shaped.PRESETS))
    ap.add_argument("--stride", default=os.environ.get("STRIDE_BIN", str(ROOT / "build/stride")))
    ap.add_argument("--baseline-bin", help="a second stride build, run alongside")
    ap.add_argument("--path", default="avx2", choices=["avx2", "avx512", "amx"])
    ap.add_argument("--ik-llama-bench", help="ik_llama.cpp's llama-bench")
    ap.add_argument("--ik-avx2", action="store_true",
                    help="ik_llama.cpp built AVX2-only (bench/shapes.py --ik-avx2), unless --ik-llama-bench")
    ap.add_argument("--llama-bench", help="mainline llama.cpp's llama-bench")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--short-prompt", type=int, default=32)
    ap.add_argument("--user-only", action="store_true",
                    help="user CPU seconds only (no system time: page faults and scheduling on a loaded machine)")
    ap.add_argument("--shaped-dir", default=str(shaped.DEFAULT_OUT))
    ap.add_argument("--out", default=str(ROOT / "bench/out/prefill_cpu"))
    a = ap.parse_args()
    if a.ik_avx2 and not a.ik_llama_bench:
        a.ik_llama_bench = anchors.built_binary(None, "IK_LLAMA_BENCH", "build_ik_llama_bench",
                                                {"IK_CMAKE_ARGS": anchors.IK_AVX2_CMAKE_ARGS})
    u = units(a)
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
                          "?"),
              "loadavg": os.getloadavg(), "threads": a.threads, "prompt": a.prompt, "path": a.path,
              "cpu_time": "user" if a.user_only else "user+sys", "statistic": f"min of {a.reps}",
              "binaries": {n: str(b) for n, (_, b, _) in u.items()}, "results": {}}
    for preset in a.presets:
        model = shaped.ensure(preset, a.shaped_dir)
        ids = np.random.default_rng(1234).integers(259, shaped.PRESETS[preset]["n_vocab"], a.prompt).tolist()
        names = list(u)
        runs = {n: [] for n in names}
        for rep in range(a.reps):
            k = rep % len(names)
            for n in names[k:] + names[:k]:
                kind, binary, arg = u[n]
                r = (stride_secs(binary, arg, model, ids, a.short_prompt, a.threads, a.user_only)
                     if kind == "stride" else llama_bench_secs(binary, model, a.prompt, a.threads, arg, a.user_only))
                runs[n].append(r)
                print(f"  {preset} rep {rep + 1}: {n} {1e3 * (r[0] - r[1]) / r[2]:.2f} CPU ms/token", flush=True)
        report["results"][preset] = {
            "runs_s": runs,
            "samples": {n: [1e3 * (r[0] - r[1]) / r[2] for r in v] for n, v in runs.items()},
            "median_ms": {n: statistics.median(1e3 * (r[0] - r[1]) / r[2] for r in v) for n, v in runs.items()},
            "min_ms": {n: ms_per_token(v) for n, v in runs.items()}}
    cpu = "user CPU" if a.user_only else "CPU"
    md = [f"# {cpu} ms per prefill token ({report['date']}, {report['cpu']}, {a.threads} thread(s), "
          f"prompt {a.prompt}, min of {a.reps}, loadavg {report['loadavg'][0]:.1f})", "",
          f"| preset | engine | {cpu} ms / prefill token | tok per CPU s | stride's speed-up over it |",
          "|---|---|---|---|---|"]
    for preset, r in report["results"].items():
        best = r["min_ms"]
        mine = best[f"stride-{a.path}"]
        for n, ms in best.items():
            md.append(f"| {preset} | {n} | {ms:.2f} | {1e3 / ms:.1f} | {ms / mine:.3f} |")
    text = "\n".join(md)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(report, indent=1))
    Path(a.out + ".md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
