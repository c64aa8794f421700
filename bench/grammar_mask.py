"""The cost of constrained decoding beside the decode step, on the real models.

For each model, one `stride serve` (batch 1, so each step is one sequence's
decode) answers the 54 schemas of tests/python/structured_schemas.py with
response_format json_schema, greedy; then the same prompts unconstrained.
From /metrics: the grammar's time per token (stride_grammar_mask_seconds:
the token mask over the vocabulary trie, applying it to the logits, and the
automaton's step for the sampled token) against the forward step time
(stride_engine_step_seconds_total / stride_engine_steps_total) and the
inter-token latency. Writes bench/out/grammar_mask.{json,png}.

Run: ~/.cache/stride/venv/bin/python bench/grammar_mask.py [--models smollm2,gemma3] [--limit N]
"""
import argparse
import datetime
import os
import sys

from serving_common import GEMMA, OUT_DIR, SMOL, StrideServer, call, cpu_name, metrics, plt, write_json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from structured_schemas import SCHEMAS  # noqa: E402

MODELS = {"smollm2": SMOL, "gemma3": GEMMA}


def histogram(m, name):
    buckets = sorted(((float(k.split('le="')[1].rstrip('"}')) if 'le="+Inf"' not in k else float("inf"), v)
                      for k, v in m.items() if k.startswith(name + "_bucket")))
    return buckets, m.get(name + "_sum", 0.0), m.get(name + "_count", 0.0)


def delta(a, b, key):
    return b.get(key, 0.0) - a.get(key, 0.0)


def run(port, constrained, cases, max_tokens):
    before = metrics(port)
    tokens = 0
    for name, schema, what in cases:
        body = {"messages": [{"role": "user", "content": f"Give me {what} as JSON."}], "max_tokens": max_tokens,
                "temperature": 0}
        if constrained:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": schema, "strict": True}}
        r = call(port, "/v1/chat/completions", body)
        assert r["status"] == 200, r
        tokens += r["body"]["usage"]["completion_tokens"]
    after = metrics(port)
    out = {
        "completion_tokens": tokens,
        "steps": delta(before, after, "stride_engine_steps_total"),
        "step_seconds": delta(before, after, "stride_engine_step_seconds_total"),
        "itl_seconds": delta(before, after, "stride_inter_token_latency_seconds_sum"),
        "itl_count": delta(before, after, "stride_inter_token_latency_seconds_count"),
        "mask_seconds": delta(before, after, "stride_grammar_mask_seconds_sum"),
        "masks": delta(before, after, "stride_grammar_mask_seconds_count"),
    }
    b0, _, _ = histogram(before, "stride_grammar_mask_seconds")
    b1, _, _ = histogram(after, "stride_grammar_mask_seconds")
    cumulative = [[le if le != float("inf") else "+Inf", c1 - c0] for (le, c0), (_, c1) in zip(b0, b1)]
    # Per bucket (Prometheus buckets are cumulative): tokens whose grammar time fell in (previous le, le].
    out["mask_buckets"] = [[le, c - (cumulative[i - 1][1] if i else 0)] for i, (le, c) in enumerate(cumulative)]
    out["step_ms"] = 1e3 * out["step_seconds"] / max(out["steps"], 1)
    out["itl_ms"] = 1e3 * out["itl_seconds"] / max(out["itl_count"], 1)
    out["mask_ms"] = 1e3 * out["mask_seconds"] / max(out["masks"], 1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="smollm2,gemma3")
    ap.add_argument("--limit", type=int, default=len(SCHEMAS), help="schemas per model")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    cases = SCHEMAS[:args.limit]
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": cpu_name(), "threads": args.threads, "schemas": len(cases), "models": {}}
    for key in args.models.split(","):
        with StrideServer(MODELS[key], threads=args.threads, env={"STRIDE_MAX_BATCH": "1"}) as srv:
            constrained = run(srv.port, True, cases, args.max_tokens)
            free = run(srv.port, False, cases, args.max_tokens)
        # The grammar's share: its time per token over the unconstrained decode
        # step's (the constrained run's steps hold relatively more prefill, as
        # its answers are shorter; that ratio is kept too).
        ratio = constrained["mask_ms"] / max(free["step_ms"], 1e-9)
        report["models"][key] = {"constrained": constrained, "unconstrained": free, "mask_over_step": ratio,
                                 "mask_over_constrained_step": constrained["mask_ms"] / max(constrained["step_ms"], 1e-9),
                                 "itl_ratio": constrained["itl_ms"] / max(free["itl_ms"], 1e-9)}
        print(f"{key}: grammar {constrained['mask_ms']:.3f} ms/token, decode step {free['step_ms']:.2f} ms "
              f"(unconstrained run), ratio {100 * ratio:.1f}%; inter-token latency {constrained['itl_ms']:.2f} ms "
              f"constrained vs {free['itl_ms']:.2f} ms free", flush=True)
    path = os.path.join(OUT_DIR, "grammar_mask.json")
    write_json(path, report)
    p = plt()
    keys = list(report["models"])
    fig, (a1, a2) = p.subplots(1, 2, figsize=(11, 4))
    x = range(len(keys))
    m = report["models"]
    a1.bar([i - 0.3 for i in x], [m[k]["unconstrained"]["itl_ms"] for k in keys], 0.2, label="inter-token, free")
    a1.bar([i - 0.1 for i in x], [m[k]["constrained"]["itl_ms"] for k in keys], 0.2, label="inter-token, schema")
    a1.bar([i + 0.1 for i in x], [m[k]["unconstrained"]["step_ms"] for k in keys], 0.2, label="decode step (free run)")
    a1.bar([i + 0.3 for i in x], [m[k]["constrained"]["mask_ms"] for k in keys], 0.2, label="grammar (mask + step)")
    a1.set_xticks(list(x), [f"{k}\n{100 * m[k]['mask_over_step']:.1f}% of a step" for k in keys])
    a1.set_ylabel("ms per token")
    a1.legend(fontsize=8)
    a1.set_title(f"{report['cpu']}, {args.threads} threads")
    for k in keys:
        b = m[k]["constrained"]["mask_buckets"]
        a2.plot(range(len(b)), [c for _, c in b], marker="o", label=k)
        a2.set_xticks(range(len(b)), [str(le) for le, _ in b], rotation=60, fontsize=7)
    a2.set_xlabel("mask time bucket (s, upper bound)")
    a2.set_ylabel("tokens")
    a2.set_yscale("log")
    a2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT_DIR, "grammar_mask.png"), dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    main()
