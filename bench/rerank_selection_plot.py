"""Plot of bench_rerank's JSON (Google Benchmark): CPU microseconds of one layer's
decode-step selection against context, per policy, the minimum over repetitions.

    build/bench_rerank --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
        --benchmark_format=json --benchmark_out=OUT.json
    ~/.cache/stride/venv/bin/python bench/rerank_selection_plot.py OUT.json   # writes OUT.png
"""
import collections
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = ["bound (estimate=bound)", "rerank, pool f16 keys", "rerank, rerank_keys=int8"]


def main(path):
    data = json.load(open(path))
    best = collections.defaultdict(lambda: float("inf"))
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or not b["run_name"].startswith("BM_DecodeSelection"):
            continue
        args = dict(part.split(":") for part in b["run_name"].split("/")[1:])
        key = (int(args["policy"]), int(args["ctx"]))
        best[key] = min(best[key], b["cpu_time"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for p, label in enumerate(LABELS):
        xs = sorted(c for (q, c) in best if q == p)
        ax.plot(xs, [best[(p, c)] for c in xs], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("CPU µs per layer and decode step (min of reps)")
    ax.set_title(f"top-k selection, Qwen2.5-0.5B layer shape, sparsity 0.9\n{data['context'].get('date', '')}")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    out = path[:-5] + ".png" if path.endswith(".json") else path + ".png"
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1])
