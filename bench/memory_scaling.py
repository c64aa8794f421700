#!/usr/bin/env python3
"""KV bytes and peak RSS against context length, per attention policy.

Measured: one `stride stream --no-ppl` run per policy pushes a long English
text through one sequence and reports, at every length of --lengths up to
that policy's measured cap, the KV bytes held and the process RSS. Dense and
top-k attention cost grows with length (a dense 128K stream takes hours on
two cores), so their caps are lower by default. Planned: `stride plan --json`
(kv_bytes, total_bytes) for every length, so every curve reaches 128K.
Writes JSON + PNG.

    bench/memory_scaling.py --lengths 1024,2048,4096,8192,16384,32768,65536,131072 \
        --cap dense=16384 --cap topk=32768
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICIES = ["dense", "window:size=1024", "rswa:sinks=4,window=1020", "topk:sparsity=0.9",
            "strided:window=1024,globals=4,stride=8"]


def stride_json(binary, *args):
    p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{args[:3]}: {p.stderr[-1000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def stream(binary, model, policy, lengths, threads):
    """{length: checkpoint row} from one streamed sequence."""
    out = subprocess.run([binary, "stream", "-m", model, "-a", policy, "--tokens", str(max(lengths)),
                          "--checkpoints", ",".join(map(str, lengths)), "--decode-steps", "1",
                          "--threads", str(threads), "--no-ppl"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"stream {policy}: {out.stderr[-1000:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    # Checkpoint i sits after i decode steps; map each back to its nominal length.
    return {L: r for L, r in zip(sorted(lengths), rows)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride")))
    ap.add_argument("--lengths", default="1024,2048,4096,8192,16384,32768,65536,131072")
    ap.add_argument("--cap", action="append", default=[],
                    help="POLICY_KIND=N: measure this kind only up to N tokens (default dense=16384, topk=32768)")
    ap.add_argument("--policies", nargs="*", default=POLICIES)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "memory_scaling"))
    a = ap.parse_args()
    lengths = [int(x) for x in a.lengths.split(",")]
    caps = {"dense": 16384, "topk": 32768}
    for c in a.cap:
        k, v = c.split("=")
        caps[k] = int(v)
    rows = []
    for pol in a.policies:
        kind = pol.split(":")[0]
        measured_lengths = [L for L in lengths if L <= caps.get(kind, max(lengths))]
        t0 = time.time()
        measured = stream(a.binary, a.model, pol, measured_lengths, a.threads) if measured_lengths else {}
        seconds = round(time.time() - t0, 1)
        for L in lengths:
            row = {"policy": pol, "length": L}
            plan = stride_json(a.binary, "plan", "-m", a.model, "-a", pol, "-c", L, "--json")
            row["plan_kv_bytes"], row["plan_total_bytes"] = plan["kv_bytes"], plan["total_bytes"]
            if L in measured:
                m = measured[L]
                row.update(kv_bytes=m["kv_bytes"], peak_rss_bytes=m["peak_rss_bytes"], rss_bytes=m["rss_bytes"],
                           stream_seconds=seconds)
            rows.append(row)
            print(json.dumps(row), flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"model": a.model, "rows": rows}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: JSON only", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for pol in a.policies:
        pts = [r for r in rows if r["policy"] == pol]
        line, = ax[0].plot([r["length"] for r in pts], [r["plan_kv_bytes"] / 2**20 for r in pts], "--", label=pol + " (plan)")
        m = [r for r in pts if "kv_bytes" in r]
        ax[0].plot([r["length"] for r in m], [r["kv_bytes"] / 2**20 for r in m], "o", color=line.get_color())
        ax[1].plot([r["length"] for r in m], [r["peak_rss_bytes"] / 2**20 for r in m], "o-", label=pol)
    ax[0].set(xscale="log", yscale="log", xlabel="context tokens", ylabel="KV MiB (dots measured)")
    ax[1].set(xscale="log", xlabel="context tokens", ylabel="peak RSS MiB (measured)")
    ax[0].legend(fontsize=6); ax[1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=120)
    print(a.out + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
