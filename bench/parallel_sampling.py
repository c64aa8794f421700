#!/usr/bin/env python3
"""Parallel sampling: one request with n=8 against eight separate concurrent
n=1 requests on the same ~2,000-token prompt (branch j of the n=8 request
draws with seed + j, the separate request j with that seed, so both produce
the same tokens).

Each scenario runs on a fresh server (the KV watermark and the counters are
its alone) and reports: time to the first token (the prefill), total time,
the KV pages' watermark (stride_kv_cache_pages_peak), the prompt tokens the
model ran, the prefix-cache counters and the fork counters
(stride_kv_fork_pages_shared_total / _copied_total). With n=8 the prompt is
prefilled once and its pages shared by the branches; eight separate requests
admitted together each prefill it (none is in the prefix cache yet).

`--attention` and `--kv-offload-bytes` run both on another policy, e.g. a
top-k hot set (`topk:sparsity=0.8,resident=8` with a tier), whose branches
fork with copies of the prompt's pages in the tier.

Writes bench/out/parallel_sampling.json (or --out).
Run: ~/.cache/stride/venv/bin/python bench/parallel_sampling.py [--model PATH] [--prompt-tokens 2000]
     [--n 8] [--max-tokens 32] [--threads 2] [--attention POLICY --kv-offload-bytes 512M]
"""
import argparse
import json
import concurrent.futures as cf
import datetime
import os
import time

from serving_common import OUT_DIR, SMOL, StrideServer, cpu_name, metrics, rng, stream, token_prompt, write_json

COUNTERS = ["stride_kv_cache_pages_peak", "stride_prompt_tokens_total", "stride_generation_tokens_total",
            "stride_prefix_cache_queries_total", "stride_prefix_cache_hits_total",
            "stride_prefix_cache_lookups_total", "stride_prefix_cache_lookup_hits_total",
            "stride_kv_forks_total", "stride_kv_fork_pages_shared_total", "stride_kv_fork_pages_copied_total"]


def body(prompt, args, seed, n=1):
    return {"prompt": prompt, "max_tokens": args.max_tokens, "temperature": 1.0, "seed": seed, "n": n,
            "ignore_eos": True, "stream_options": {"include_usage": True}}


def server(args):
    extra = ["--kv-budget", args.kv_budget] + (["--attention", args.attention] if args.attention else [])
    env = {"STRIDE_MAX_BATCH": str(args.n), "STRIDE_REQUEST_TIMEOUT_S": "3600"}
    if args.kv_offload_bytes:
        env["STRIDE_KV_OFFLOAD_BYTES"] = args.kv_offload_bytes
    return StrideServer(args.model, extra_args=extra, threads=args.threads, env=env)


def scenario(args, prompt, together):
    with server(args) as s:
        before = metrics(s.port)
        t0 = time.perf_counter()
        if together:
            results = [stream(s.port, "/v1/completions", body(prompt, args, args.seed, args.n), timeout=3600)]
        else:
            with cf.ThreadPoolExecutor(args.n) as pool:
                futs = [pool.submit(stream, s.port, "/v1/completions", body(prompt, args, args.seed + j), 3600)
                        for j in range(args.n)]
                results = [f.result() for f in futs]
        total = time.perf_counter() - t0
        after = metrics(s.port)
    for r in results:
        assert r["status"] == 200 and r["done"], r
    ttfts = sorted(r["ttft"] for r in results)
    out = {
        "requests": len(results),
        "ttft_s_first": ttfts[0],
        "ttft_s_last": ttfts[-1],
        "total_s": total,
        "completion_tokens": sum(r["usage"]["completion_tokens"] if r["usage"] else 0 for r in results),
        "counters": {k: after.get(k, 0) - (0 if k == "stride_kv_cache_pages_peak" else before.get(k, 0))
                     for k in COUNTERS},
        "pages_capacity": after.get("stride_kv_cache_pages_capacity"),
    }
    c = out["counters"]
    # Admitted prompt tokens less those the prefix cache supplied: what the model ran.
    out["prompt_tokens_computed"] = c["stride_prompt_tokens_total"] - c["stride_prefix_cache_hits_total"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=SMOL)
    ap.add_argument("--prompt-tokens", type=int, default=2000)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-budget", default="512M")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--attention", default="", help="the server's policy (default: the model's)")
    ap.add_argument("--kv-offload-bytes", default="", help="an offload tier of this size (a top-k hot set needs one)")
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "parallel_sampling.json"))
    args = ap.parse_args()
    prompt = token_prompt(args.prompt_tokens, rng(args.seed))
    load = os.getloadavg()
    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_name(),
        "loadavg_at_start": load,
        "model": os.path.basename(args.model),
        "prompt_tokens": args.prompt_tokens,
        "n": args.n,
        "max_tokens": args.max_tokens,
        "threads": args.threads,
        "attention": args.attention or "default",
        "kv_offload_bytes": args.kv_offload_bytes or "0",
        f"n={args.n}": scenario(args, prompt, together=True),
        f"{args.n}x n=1": scenario(args, prompt, together=False),
    }
    a, b = out[f"n={args.n}"], out[f"{args.n}x n=1"]
    out["ratios_separate_over_n"] = {
        "ttft_last": b["ttft_s_last"] / a["ttft_s_last"],
        "total": b["total_s"] / a["total_s"],
        "pages_peak": b["counters"]["stride_kv_cache_pages_peak"] / a["counters"]["stride_kv_cache_pages_peak"],
        "prompt_tokens_computed": b["prompt_tokens_computed"] / a["prompt_tokens_computed"],
    }
    write_json(args.out, out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
