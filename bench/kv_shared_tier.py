"""Shared prefix-KV tier (kv_shared_tier, Redis): an 8K-token document is
prefilled on replica A, which publishes its pages; then replica B, started
fresh, is asked a question about the same document. Time to first token on
B with the tier (it takes the document's pages from Redis and computes only
the question) against B without it (a cold prefill of everything), side by
side, with the bytes B read from Redis and A wrote, and whether B's greedy
tokens equal the cold run's.

Each repeat uses fresh replicas (empty local caches) and a flushed Redis;
the replicas run one at a time, so they never share the CPU. TTFT is the
wall time of a request for one token (max_tokens=1, prompt given as ids).

Writes bench/out/kv_shared_tier.json and .png.

  python bench/kv_shared_tier.py [--doc-tokens 8192] [--repeats 2] [--threads 2]
"""
import argparse
import datetime
import os
import time

from serving_common import OUT_DIR, SMOL, StrideServer, call, cpu_name, metrics, plt, rng, token_prompt, write_json
from redis_proc import RedisProc

SECRET = "bench-cluster-secret-0123456789"


def ask(port, prompt, max_tokens):
    r = call(port, "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                       "ignore_eos": True, "logprobs": 1})
    assert r["status"] == 200, r
    return r


def wait_published(port, want, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        m = metrics(port)
        if m.get("stride_kv_shared_tier_published_total", 0) >= want:
            return m
        time.sleep(0.2)
    raise AssertionError("replica A did not publish its pages")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=SMOL)
    ap.add_argument("--doc-tokens", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    doc = token_prompt(args.doc_tokens, rng(1))
    question_a, question_b = token_prompt(24, rng(2)), token_prompt(24, rng(3))
    page = 32
    pages = len(doc) // page
    tier_env = {"STRIDE_KV_SHARED_TIER_SECRET": SECRET}
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": cpu_name(), "threads": args.threads, "model": os.path.basename(args.model),
              "doc_tokens": len(doc), "question_tokens": len(question_b), "repeats": args.repeats,
              "load_average_before": os.getloadavg(), "runs": []}
    with RedisProc(maxmemory="2gb") as redis:
        for rep in range(args.repeats):
            redis.call("FLUSHALL")
            tier_args = ["--kv-shared-tier", redis.url]
            with StrideServer(args.model, threads=args.threads, extra_args=tier_args, env=tier_env) as a:
                t0 = time.perf_counter()
                ask(a.port, doc + question_a, 1)
                a_prefill = time.perf_counter() - t0
                ma = wait_published(a.port, pages)
            with StrideServer(args.model, threads=args.threads, extra_args=tier_args, env=tier_env) as b:
                t0 = time.perf_counter()
                warm = ask(b.port, doc + question_b, 1)
                ttft_tier = time.perf_counter() - t0
                mb = metrics(b.port)
                tokens_tier = ask(b.port, doc + question_b, 8)["body"]["choices"][0]["logprobs"]
            with StrideServer(args.model, threads=args.threads) as cold:
                t0 = time.perf_counter()
                first_cold = ask(cold.port, doc + question_b, 1)
                ttft_cold = time.perf_counter() - t0
                tokens_cold = ask(cold.port, doc + question_b, 8)["body"]["choices"][0]["logprobs"]
            run = {"a_prefill_s": a_prefill, "ttft_tier_s": ttft_tier, "ttft_cold_s": ttft_cold,
                   "speedup": ttft_cold / ttft_tier,
                   "cached_tokens": warm["body"]["usage"]["prompt_tokens_details"]["cached_tokens"],
                   "pages_from_tier": mb.get("stride_kv_shared_tier_hits_total"),
                   "bytes_in_b": mb.get("stride_kv_shared_tier_bytes_in_total"),
                   "bytes_out_a": ma.get("stride_kv_shared_tier_bytes_out_total"),
                   "same_tokens_and_logprobs": tokens_tier == tokens_cold and
                   warm["body"]["choices"][0]["logprobs"] == first_cold["body"]["choices"][0]["logprobs"]}
            report["runs"].append(run)
            print(rep, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in run.items()}, flush=True)
    report["load_average_after"] = os.getloadavg()
    best = lambda k: min(r[k] for r in report["runs"])  # noqa: E731
    report["ttft_tier_s"], report["ttft_cold_s"] = best("ttft_tier_s"), best("ttft_cold_s")
    report["speedup"] = report["ttft_cold_s"] / report["ttft_tier_s"]
    report["bytes_moved"] = report["runs"][-1]["bytes_in_b"]
    path = os.path.join(OUT_DIR, "kv_shared_tier.json")
    write_json(path, report)

    p = plt()
    fig, (a1, a2) = p.subplots(1, 2, figsize=(10, 4))
    a1.bar(["B cold prefill\n(tier off)", "B with the tier\n(pages from A)"],
           [report["ttft_cold_s"], report["ttft_tier_s"]], color=["#999", "#2a7"])
    a1.set_ylabel("time to first token, s (best of %d)" % args.repeats)
    a1.set_title(f"{report['model']}, {len(doc)}-token document, {report['cpu'][:36]}, {args.threads} threads\n"
                 f"{report['speedup']:.1f}x faster with the shared tier", fontsize=9)
    a2.bar(["read by B", "written by A"], [report["bytes_moved"] / 2**20, report["runs"][-1]["bytes_out_a"] / 2**20])
    a2.set_ylabel("MiB through Redis")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT_DIR, "kv_shared_tier.png"), dpi=110)
    print("wrote", path, "speedup", round(report["speedup"], 2))


if __name__ == "__main__":
    main()
