#!/usr/bin/env python3
"""The StreamingLLM result on SmolLM2 (trained to 8K): perplexity against
position on a long English document, dense vs R-SWA with cache-relative
positions (and a plain window). Dense should degrade past the training
length; rswa should stay flat. One `stride stream` run per policy reports the
perplexity of every --bucket tokens (plus KV bytes and decode speed at each
bucket end). Writes JSON + PNG.

    bench/streaming_ppl.py --length 32768 --bucket 1024
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stream(a, policy):
    checkpoints = list(range(a.bucket, a.length + 1, a.bucket))
    cmd = [a.binary, "stream", "-m", a.model, "-a", policy, "--tokens", str(a.length),
           "--checkpoints", ",".join(map(str, checkpoints)), "--decode-steps", "1", "--threads", str(a.threads)]
    if a.text:
        cmd += ["--text", a.text]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"stream {policy}: {p.stderr[-1000:]}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    print(f"{policy}: {len(rows)} buckets in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"policy": policy, "depth": [r["depth"] for r in rows],
            "ppl": [r["ppl_since_last_checkpoint"] for r in rows],
            "kv_bytes": [r["kv_bytes"] for r in rows], "decode_tok_s": [r["decode_tok_s"] for r in rows],
            "seconds": round(time.time() - t0, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride")))
    ap.add_argument("--length", type=int, default=32768)
    ap.add_argument("--bucket", type=int, default=1024)
    ap.add_argument("--policies", nargs="*",
                    default=["dense", "rswa:sinks=4,window=2044,pos=rel", "window:size=2048"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--text", default=None, help="default: the Debian reference (scripts/oracles/make_long_text.py)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "streaming_ppl"))
    a = ap.parse_args()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    curves = [stream(a, p) for p in a.policies]
    report = {"model": a.model, "length": a.length, "bucket": a.bucket, "threads": a.threads, "curves": curves}
    # The claim in numbers: mean perplexity inside the training length vs beyond it.
    for c in curves:
        inside = [p for d, p in zip(c["depth"], c["ppl"]) if d <= 8192]
        beyond = [p for d, p in zip(c["depth"], c["ppl"]) if d > 8192 + a.bucket]
        c["mean_ppl_to_8k"] = sum(inside) / len(inside) if inside else None
        c["mean_ppl_beyond_8k"] = sum(beyond) / len(beyond) if beyond else None
        print(f'{c["policy"]}: mean ppl <=8K {c["mean_ppl_to_8k"]}, >8K {c["mean_ppl_beyond_8k"]}', flush=True)
    with open(a.out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: JSON only", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c in curves:
        ax.plot(c["depth"], c["ppl"], "k-" if c["policy"] == "dense" else "-", label=c["policy"])
    ax.axvline(8192, color="gray", ls=":", label="training length (8K)")
    ax.set(xlabel="position (tokens)", ylabel=f"perplexity per {a.bucket} tokens", yscale="log",
           title="SmolLM2-135M: perplexity against position")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=120)
    print(a.out + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
