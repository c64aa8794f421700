#!/usr/bin/env python3
"""Prefill time against prompt length: dense, R-SWA and block-sparse prefill.

Each policy streams the same English text through one sequence
(`stride stream --no-ppl`, 512-token prompt chunks, one decode step per
checkpoint), so `elapsed_s` at a checkpoint is the time to prefill that many
tokens. Dense prefill is quadratic (a dense 128K prompt takes about an hour on
two cores), so each policy has a length cap (--cap POLICY=TOKENS); lengths
above dense's cap get a dense time extrapolated from a fit a + b*L + c*L^2 to
its measured points, marked as such in the JSON and the plot. The read share
is pages read / pages present over the prefill (attention only). Optionally
(--eval-lengths) runs `stride eval` for the same policies, so speed and
answers sit in one report. Writes JSON + PNG.

    bench/sparse_prefill.py --lengths 8192,16384,32768,65536,131072 --cap dense=32768
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICIES = ["dense", "rswa:sinks=4,window=1020", "sparse_prefill"]


def stream(binary, model, policy, lengths, threads):
    """{length: checkpoint row} from one streamed sequence."""
    out = subprocess.run([binary, "stream", "-m", model, "-a", policy, "--tokens", str(max(lengths)),
                          "--checkpoints", ",".join(map(str, lengths)), "--decode-steps", "1",
                          "--chunk", "512", "--threads", str(threads), "--no-ppl"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"stream {policy}: {out.stderr[-1000:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {L: r for L, r in zip(sorted(lengths), rows)}


def quadratic_fit(points):
    """Least squares a + b*L + c*L^2 through [(L, t)] (needs 3 points)."""
    import numpy as np
    L = np.array([p[0] for p in points], dtype=float)
    t = np.array([p[1] for p in points], dtype=float)
    coef, *_ = np.linalg.lstsq(np.stack([np.ones_like(L), L, L * L], axis=1), t, rcond=None)
    return lambda x: float(coef[0] + coef[1] * x + coef[2] * x * x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride")))
    ap.add_argument("--lengths", default="4096,8192,16384,32768,65536,131072")
    ap.add_argument("--policy", action="append", help="policies to time (default: dense, rswa, sparse_prefill)")
    ap.add_argument("--cap", action="append", default=[], help="POLICY=TOKENS: longest length timed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-lengths", default="", help="also run `stride eval` at these lengths")
    ap.add_argument("--eval-tasks", default="niah_single,niah_multikey,vt,passkey")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "sparse_prefill"))
    args = ap.parse_args()
    lengths = sorted(int(x) for x in args.lengths.split(","))
    policies = args.policy or POLICIES
    caps = {c.split("=", 1)[0]: int(c.split("=", 1)[1]) for c in args.cap}
    caps.setdefault("dense", 32768)

    report = {"model": os.path.basename(args.model), "threads": args.threads, "policies": {}}
    for pol in policies:
        ls = [L for L in lengths if L <= caps.get(pol, max(lengths))]
        if not ls:
            continue
        print(f"[sparse_prefill] {pol}: {ls}", file=sys.stderr, flush=True)
        rows = stream(args.binary, args.model, pol, ls, args.threads)
        report["policies"][pol] = {
            str(L): {"prefill_s": r["elapsed_s"], "prefill_tok_s": r["prefill_tok_s"],
                     "read_share": r["kv"]["stride_attention_pages_read_total"] /
                     max(1, r["kv"]["stride_attention_pages_present_total"]),
                     "kv_bytes": r["kv_bytes"]} for L, r in rows.items()}

    dense = report["policies"].get("dense", {})
    fit = quadratic_fit([(int(L), v["prefill_s"]) for L, v in dense.items()]) if len(dense) >= 3 else None
    ratios = {}
    for pol, rows in report["policies"].items():
        if pol == "dense":
            continue
        for L, v in rows.items():
            if L in dense:
                ref, how = dense[L]["prefill_s"], "measured"
            elif fit is not None:
                ref, how = fit(int(L)), "extrapolated"
            else:
                continue
            ratios.setdefault(pol, {})[L] = {"dense_s": ref, "dense": how, "speedup": ref / v["prefill_s"]}
    report["speedup_vs_dense"] = ratios

    if args.eval_lengths:
        ev_json = args.out + "_eval.json"
        cmd = [args.binary, "eval", "-m", args.model, "--lengths", args.eval_lengths, "--tasks", args.eval_tasks,
               "--threads", str(args.threads), "--json", ev_json]
        for pol in policies:
            if pol != "dense":
                cmd += ["-a", pol]
        subprocess.run(cmd, check=True)
        with open(ev_json) as f:
            report["eval"] = json.load(f).get("summary")

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(report, f, indent=2)
    for pol, rows in ratios.items():
        for L, r in sorted(rows.items(), key=lambda kv: int(kv[0])):
            v = report["policies"][pol][L]
            print(f"{pol:28s} L={L:>7s} prefill {v['prefill_s']:8.1f} s  read {v['read_share']:.3f}  "
                  f"dense {r['dense_s']:8.1f} s ({r['dense']})  speed-up {r['speedup']:.2f}x")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for pol, rows in report["policies"].items():
        xs = sorted(int(L) for L in rows)
        ax.plot(xs, [rows[str(L)]["prefill_s"] for L in xs], marker="o", label=pol)
    if fit is not None:
        xs = [L for L in lengths if str(L) not in dense]
        if xs:
            ax.plot(xs, [fit(L) for L in xs], "k--", marker="x", label="dense (extrapolated)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("prefill seconds")
    ax.set_title(f"Prefill time, {report['model']}, {args.threads} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=110)
    print(f"[sparse_prefill] wrote {args.out}.json and .png", file=sys.stderr)


if __name__ == "__main__":
    main()
