#!/usr/bin/env python3
"""The StreamingLLM result on SmolLM2 (trained to 8K): perplexity against
position on a long English document, dense vs R-SWA with cache-relative
positions (and plain window). Dense should degrade past the training length;
rswa should stay flat. Runs `stride validate` once (all policies in lockstep
with one dense run) and plots its perplexity curves. Writes JSON + PNG.

    bench/streaming_ppl.py --length 32768 --bucket 1024
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride")))
    ap.add_argument("--length", type=int, default=32768)
    ap.add_argument("--bucket", type=int, default=1024)
    ap.add_argument("--policies", nargs="*", default=["rswa:sinks=4,window=2044,pos=rel", "window:size=2048"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--text", default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "streaming_ppl"))
    a = ap.parse_args()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    cmd = [a.binary, "validate", "-m", a.model, "--lengths", str(a.length), "--bucket", str(a.bucket),
           "--threads", str(a.threads), "--json", a.out + ".json"]
    for p in a.policies:
        cmd += ["-a", p]
    if a.text:
        cmd += ["--text", a.text]
    subprocess.run(cmd, check=True)
    r = json.load(open(a.out + ".json"))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: JSON only", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, c in enumerate(r["curves"]):
        x = [(j + 1) * c["bucket"] for j in range(len(c["ppl_dense"]))]
        if i == 0:
            ax.plot(x, c["ppl_dense"], "k-", label="dense")
        ax.plot(x, c["ppl_policy"], "-", label=c["policy"])
    ax.axvline(8192, color="gray", ls=":", label="training length (8K)")
    ax.set(xlabel="position (tokens)", ylabel=f"perplexity per {a.bucket} tokens", yscale="log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=120)
    print(a.out + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
