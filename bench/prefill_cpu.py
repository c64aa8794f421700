#!/usr/bin/env python3
"""CPU milliseconds per prefill token: stride on one kernel path against llama-bench anchors.

On a shared, loaded machine wall-clock tok/s measures the neighbours; the CPU time a process
spends (wait4's user + system time) does not, to first order. Each figure is a difference of two
runs of the same binary, so that loading, repacking and warm-up drop out:
  * stride: `stride run -m F --prompt-ids <P ids> -n 1 --threads T` (STRIDE_CPU=PATH) minus the
    same with a P0-token prompt: the CPU time of P - P0 prefill tokens;
  * llama-bench: `-p P -n 0 -r 2` minus `-r 1` (same -fa, same -rtr): one P-token prompt
    (llama-bench's warm-up prompt runs in both).
Units run interleaved, in an order rotated each rep; the medians over --reps are reported, and
an anchor's figure is its fastest setting (flash attention off or on; ik's -rtr 1), as its users
would pick it.

  ~/.cache/stride/venv/bin/python bench/prefill_cpu.py [--ik-avx2 | --ik-llama-bench PATH] [--llama-bench PATH]
      [--stride build/stride] [--baseline-bin PATH] [--path avx2] [--presets ...] [--reps 3]
      [--threads 1] [--prompt 512] [--short-prompt 32] [--out bench/out/prefill_cpu]

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


def cpu_seconds(cmd, env=None):
    """Run CMD; return (stdout, its user + system CPU seconds). Raises on failure."""
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
    return out.decode("utf-8", "replace"), ru.ru_utime + ru.ru_stime


def stride_ms(binary, path, model, ids, short, threads):
    """CPU ms per prefill token of stride: the long prompt's run minus the short one's."""
    env = dict(os.environ, STRIDE_CPU=path)
    secs = []
    for n in (len(ids), short):
        _, s = cpu_seconds([binary, "run", "-m", model, "--prompt-ids", " ".join(map(str, ids[:n])), "-n", 1,
                            "--temperature", 0, "--ignore-eos", "--json", "--threads", threads], env)
        secs.append(s)
    return 1e3 * (secs[0] - secs[1]) / (len(ids) - short)


def llama_bench_ms(binary, model, prompt, threads, extra):
    """CPU ms per prefill token of llama-bench: two reps minus one."""
    secs = []
    for reps in (2, 1):
        _, s = cpu_seconds([binary, "-m", model, "-p", prompt, "-n", 0, "-t", threads, "-r", reps,
                            "-o", "json", *extra])
        secs.append(s)
    return 1e3 * (secs[0] - secs[1]) / prompt


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
              "binaries": {n: str(b) for n, (_, b, _) in u.items()}, "results": {}}
    for preset in a.presets:
        model = shaped.ensure(preset, a.shaped_dir)
        ids = np.random.default_rng(1234).integers(259, shaped.PRESETS[preset]["n_vocab"], a.prompt).tolist()
        names = list(u)
        samples = {n: [] for n in names}
        for rep in range(a.reps):
            k = rep % len(names)
            for n in names[k:] + names[:k]:
                kind, binary, arg = u[n]
                ms = (stride_ms(binary, arg, model, ids, a.short_prompt, a.threads) if kind == "stride"
                      else llama_bench_ms(binary, model, a.prompt, a.threads, arg))
                samples[n].append(ms)
                print(f"  {preset} rep {rep + 1}: {n} {ms:.2f} CPU ms/token", flush=True)
        report["results"][preset] = {"samples": samples,
                                     "median_ms": {n: statistics.median(v) for n, v in samples.items()}}
    md = [f"# CPU ms per prefill token ({report['date']}, {report['cpu']}, {a.threads} thread(s), "
          f"prompt {a.prompt}, median of {a.reps}, loadavg {report['loadavg'][0]:.1f})", "",
          "| preset | engine | CPU ms / prefill token | tok per CPU s | stride's speed-up over it |",
          "|---|---|---|---|---|"]
    for preset, r in report["results"].items():
        med = r["median_ms"]
        mine = med[f"stride-{a.path}"]
        for n, ms in med.items():
            md.append(f"| {preset} | {n} | {ms:.2f} | {1e3 / ms:.1f} | {ms / mine:.3f} |")
    text = "\n".join(md)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(report, indent=1))
    Path(a.out + ".md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
