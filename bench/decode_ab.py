"""End-to-end decode A/B of two stride binaries (say main's and a branch's)
on one random-token prompt, interleaved so that both see the same machine
load: each round runs every policy on both binaries, in alternating order,
and the result is, per binary and policy, the least decode CPU time per
token (`decode_cpu_seconds`, every thread of the process, decode steps only)
and the best decode tok/s (wall: read it as direction on a shared machine).

    bench/decode_ab.py --base /tmp/stride_main --new build/stride --length 8192 --rounds 3 \\
        --policies topk:sparsity=0.9,prefill=dense \\
        topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8 --out bench/out/decode_ab.json

One binary under two sets of flags: --base and --new the same binary, with
--base-args / --new-args (one shell-quoted string each), e.g.
    --base build/stride --new build/stride --base-args "--head-type file" --new-args "--head-type q4_k"
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import tempfile

import numpy as np


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(binary, model, ids_file, policy, n, threads, extra=()):
    cmd = [binary, "run", "-m", model, "--prompt-ids-file", ids_file, "-n", str(n), "--ignore-eos",
           "--temperature", "0", "--json", "--threads", str(threads), "-a", policy, *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    d = json.loads(out.strip().splitlines()[-1])
    steps = d["generated_tokens"] - 1  # the first token comes from the prompt's logits
    return {"decode_cpu_ms_per_token": 1e3 * d["decode_cpu_seconds"] / steps, "decode_tok_s": d["decode_tok_s"],
            "pages_read": d["decode_pages_read"] / max(1, d["decode_pages_present"]),
            "generated_ids": d["generated_ids"], "load": uptime()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", nargs="+", required=True)
    ap.add_argument("--base", required=True, help="stride binary A")
    ap.add_argument("--new", required=True, help="stride binary B")
    ap.add_argument("--base-args", default="", help="extra flags of A's runs (one shell-quoted string)")
    ap.add_argument("--new-args", default="", help="extra flags of B's runs")
    ap.add_argument("--model", default="models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    ap.add_argument("--length", type=int, default=8192)
    ap.add_argument("--n-vocab", type=int, default=151936)
    ap.add_argument("--tokens", type=int, default=65)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    runs = []
    result = {"note": "per binary and policy: min decode CPU ms per token, max decode tok/s over interleaved rounds",
              "base": a.base, "new": a.new, "base_args": a.base_args, "new_args": a.new_args, "model": a.model, "length": a.length, "tokens": a.tokens,
              "threads": a.threads, "start": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "load_start": uptime(), "runs": runs}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ids_file = os.path.join(tmp, "ids.txt")
        ids = np.random.default_rng(a.length).integers(0, a.n_vocab, a.length)
        open(ids_file, "w").write(" ".join(map(str, ids)))
        for i in range(a.rounds):
            order = ["base", "new"] if i % 2 == 0 else ["new", "base"]
            for policy in a.policies:
                for which in order:
                    extra = shlex.split(getattr(a, which + "_args"))
                    r = run(getattr(a, which), a.model, ids_file, policy, a.tokens, a.threads, extra)
                    runs.append(dict(r, round=i, which=which, policy=policy))
                    print(f"round {i} {which:4s} {policy}: {r['decode_cpu_ms_per_token']:.2f} ms CPU/token, "
                          f"{r['decode_tok_s']:.2f} tok/s ({r['load']})", flush=True)
                    summarize(result, a.policies)
                    json.dump(result, open(a.out, "w"), indent=1)


def summarize(result, policies):
    rows = []
    for policy in policies:
        row = {"policy": policy}
        for which in ("base", "new"):
            mine = [r for r in result["runs"] if r["policy"] == policy and r["which"] == which]
            if mine:
                row[which + "_cpu_ms_per_token"] = min(r["decode_cpu_ms_per_token"] for r in mine)
                row[which + "_tok_s"] = max(r["decode_tok_s"] for r in mine)
                row[which + "_runs"] = len(mine)
        if "base_runs" in row and "new_runs" in row:
            row["cpu_base_over_new"] = row["base_cpu_ms_per_token"] / row["new_cpu_ms_per_token"]
            base_ids = [r["generated_ids"] for r in result["runs"] if r["policy"] == policy and r["which"] == "base"]
            new_ids = [r["generated_ids"] for r in result["runs"] if r["policy"] == policy and r["which"] == "new"]
            row["same_tokens"] = base_ids[0] == new_ids[0]
        rows.append(row)
    result["rows"] = rows
    result["end"] = datetime.datetime.now(datetime.timezone.utc).isoformat()


if __name__ == "__main__":
    main()
