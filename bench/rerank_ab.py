"""A/B of two bench_rerank binaries (say main's and a branch's), interleaved
in one loop so that both see the same machine load: each round runs both,
in alternating order, on every CPU path asked for (STRIDE_CPU), and the
result is each benchmark's minimum CPU time per binary and path.

    bench/rerank_ab.py --base /tmp/bench_rerank_main --new build/bench_rerank \\
        --paths avx2,avx512 --rounds 5 --out bench/out/rerank_avx2/ab.json
"""
import argparse
import datetime
import json
import os
import subprocess
import tempfile


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(binary, path, bench_filter, min_time):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, STRIDE_CPU=path)
        subprocess.run([binary, f"--benchmark_filter={bench_filter}", f"--benchmark_min_time={min_time}",
                        "--benchmark_format=json", f"--benchmark_out={out.name}"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(out.name))["benchmarks"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--paths", default="avx2,avx512")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default="BM_DecodeSelection")
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    best = {}  # (name, path, which) -> min cpu us
    load = [uptime()]
    for i in range(a.rounds):
        order = ["base", "new"] if i % 2 == 0 else ["new", "base"]
        for path in a.paths.split(","):
            for which in order:
                for b in run(getattr(a, which), path, a.filter, a.min_time):
                    key = (b["name"], path, which)
                    best[key] = min(best.get(key, float("inf")), b["cpu_time"])
    load.append(uptime())
    rows = []
    for name, path in sorted({(n, p) for (n, p, _) in best}):
        base, new = best[(name, path, "base")], best[(name, path, "new")]
        rows.append({"name": name, "path": path, "base_cpu_us": base, "new_cpu_us": new, "base_over_new": base / new})
    result = {"note": f"min of {a.rounds} interleaved runs per binary and path, CPU time per call (us)",
              "base": a.base, "new": a.new, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "load": load, "rows": rows}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    json.dump(result, open(a.out, "w"), indent=1)
    for r in rows:
        print(f"{r['path']:7s} {r['name']:45s} base {r['base_cpu_us']:9.1f} new {r['new_cpu_us']:9.1f} "
              f"{r['base_over_new']:.3f}x")


if __name__ == "__main__":
    main()
