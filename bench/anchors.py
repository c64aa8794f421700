"""The speed anchors of the bench scripts: llama-bench of mainline llama.cpp and of ik_llama.cpp.

Mainline's llama-bench comes from scripts/build_llama_bench (the llama.cpp of the pinned
llama-cpp-python sdist), ik's from scripts/build_ik_llama_bench (the ik_llama.cpp of the pinned
ik-llama-cpp-python sdist); both are built on first use and cached.

Every llama-bench run measures flash attention off and on (`-fa 0,1`). ik runs in two variants,
run-time repacking on (`-rtr 1`: the weights are repacked at load into its interleaved-row
layouts, its fastest mode for ordinary GGUFs) and off. Per metric, the fastest (variant, flash
attention) setting of the medians over the reps counts as the engine's figure, as its users
would pick it; every setting's median stays in the report.
"""
import json
import os
import statistics
import subprocess
from pathlib import Path

from measured import run_measured

ROOT = Path(__file__).resolve().parent.parent
MAINLINE = "llama.cpp"
IK = "ik_llama.cpp"
ENGINES = (MAINLINE, IK)
# llama-bench runs of one rep: unit name -> (engine, variant label, extra llama-bench args).
# The CPU flags of an AVX2-only ik_llama.cpp build (IK_CMAKE_ARGS of scripts/build_ik_llama_bench):
# what an AVX2-only CPU such as Zen 2/3 runs, measurable on a CPU with more. Its quantized-KV
# flash-attention kernels are left out (the benches keep an f16 KV cache): they are most of its
# build time.
IK_AVX2_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
                      "-DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_BF16=OFF "
                      "-DGGML_IQK_FA_ALL_QUANTS=OFF")
UNITS = {MAINLINE: (MAINLINE, "", []),
         f"{IK} -rtr 1": (IK, "-rtr 1", ["-rtr", "1"]),
         f"{IK} -rtr 0": (IK, "-rtr 0", ["-rtr", "0"])}


def built_binary(arg, env_var, script, script_env=None):
    """ARG, else $ENV_VAR, else the last stdout line of scripts/SCRIPT (which builds or finds it;
    SCRIPT_ENV: variables added to its environment)."""
    path = arg or os.environ.get(env_var)
    if not path:
        res = subprocess.run([str(ROOT / "scripts" / script)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, **(script_env or {})})
        if res.returncode != 0 or not res.stdout.strip():
            raise SystemExit(f"scripts/{script} failed (its error is above)")
        path = res.stdout.strip().splitlines()[-1]
    if not os.access(path, os.X_OK):
        raise SystemExit(f"llama-bench not found at {path}")
    return path


def find_binaries(mainline_arg, ik_arg, with_ik, ik_avx2=False):
    """{engine: llama-bench path}; ik only when WITH_IK, its AVX2-only build with IK_AVX2."""
    bins = {MAINLINE: built_binary(mainline_arg, "LLAMA_BENCH", "build_llama_bench")}
    if with_ik:
        env = {"IK_CMAKE_ARGS": IK_AVX2_CMAKE_ARGS} if ik_avx2 else None
        bins[IK] = built_binary(ik_arg, "IK_LLAMA_BENCH", "build_ik_llama_bench", env)
    return bins


def units(binaries):
    """The run units of one rep for the engines in BINARIES: name -> (engine, binary, extra args)."""
    return {u: (eng, binaries[eng], extra) for u, (eng, _, extra) in UNITS.items() if eng in binaries}


def test_name(row):
    """llama-bench's name of a JSON row's test: pp512, tg128, tg128@pp512 (ik's -gp, which names
    its rows in "test"), or tg32@d16384 (mainline's -d: the test after a depth-token prompt)."""
    if row.get("test"):
        return row["test"]
    p, g, d = int(row["n_prompt"]), int(row["n_gen"]), int(row.get("n_depth") or 0)
    name = f"pp{p}" if g == 0 else f"tg{g}" if p == 0 else f"tg{g}@pp{p}"
    return f"{name}@d{d}" if d else name


def parse_json_rows(out):
    """The rows of llama-bench's `-o json` output (the JSON array after any log lines)."""
    return json.loads(out[out.index("["):])


def llama_bench_once(binary, model, tests, threads, extra=()):
    """One llama-bench run of TESTS (its args, e.g. ["-p", "512", "-n", "128"]), one repetition,
    flash attention off and on. Returns ({"<test>_fa<0|1>": tok/s}, peak RSS bytes, build info)."""
    out, rss = run_measured([binary, "-m", model, *tests, "-t", threads, "-fa", "0,1", "-r", "1",
                             "-o", "json", *extra])
    rows = parse_json_rows(out)
    res = {f"{test_name(r)}_fa{1 if int(r['flash_attn']) == 1 else 0}": float(r["avg_ts"]) for r in rows}
    info = {k: rows[0].get(k) for k in ("build_commit", "build_number", "cpu_info", "model_type")}
    return res, rss, info


def describe(res):
    """One log line's worth of a llama_bench_once result: test tok/s with fa 0/1."""
    tests = sorted({k.rsplit("_fa", 1)[0] for k in res})
    return " ".join(f"{t} {res.get(t + '_fa0', 0):.1f}/{res.get(t + '_fa1', 0):.1f}" for t in tests) + " (fa 0/1)"


def summarize(engine, samples, metrics):
    """Fold the reps of ENGINE's units into its figures. SAMPLES: unit name -> [result per rep];
    METRICS: figure name (e.g. "prefill") -> llama-bench test (e.g. "pp512"). Returns, per figure,
    "<figure>_tok_s" (fastest setting's median), "<figure>_setting" and "<figure>_tok_s_by_setting"."""
    out = {}
    for fig, test in metrics.items():
        by = {}
        for u, reps in samples.items():
            if UNITS[u][0] != engine:
                continue
            for f in (0, 1):
                vals = [r[f"{test}_fa{f}"] for r in reps if f"{test}_fa{f}" in r]
                if vals:
                    by[" ".join(filter(None, (UNITS[u][1], f"fa{f}")))] = statistics.median(vals)
        best = max(by, key=by.get)
        out.update({f"{fig}_tok_s": by[best], f"{fig}_setting": best, f"{fig}_tok_s_by_setting": by})
    return out


def ratios(value, anchors, figure):
    """{engine: VALUE / that anchor's FIGURE tok/s} for each anchor engine present."""
    return {e: value / a[f"{figure}_tok_s"] for e, a in anchors.items() if a.get(f"{figure}_tok_s")}
