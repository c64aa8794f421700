"""The cost of handing a long prompt to the server: JSON text, JSON token ids
and gRPC packed ids, side by side in one run on one server.

One `stride serve` (SmolLM2, HTTP and --grpc-port) first prefills an N-token
prompt (default 32K) once, so every measured request finds all but its last
page in the prefix cache: what remains is the transfer, the parse (and for
text the tokenization), the lookup, a few tokens of prefill and one decode
step. Each mode runs `--reps` times, interleaved; the report gives medians
and the ratio of each mode to gRPC ids. Writes bench/out/grpc_submit.{json,png}.

Run: ~/.cache/stride/venv/bin/python bench/grpc_submit.py [--tokens 32768] [--reps 7]
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import grpc

from serving_common import OUT_DIR, SMOL, StrideServer, call, cpu_name, free_port, plt, served_model, write_json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from stride_grpc import inference_pb2 as pb, inference_pb2_grpc as pb_grpc  # noqa: E402

WORDS = ("the river carried lanterns past quiet houses while merchants counted coins and scholars argued "
         "about maps of distant harbours under a sky of slow grey clouds").split()


def long_text(n_words):
    return " ".join(WORDS[i % len(WORDS)] + ("." if i % 17 == 16 else "") for i in range(n_words))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--attention", default="window:size=1024")
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "grpc_submit"))
    args = ap.parse_args()

    grpc_port = free_port()
    ctx = args.tokens + 64
    # A sliding window keeps the one cold prefill linear in the prompt; what is
    # measured afterwards (transfer, parse, tokenize, prefix lookup) does not
    # depend on the policy.
    with StrideServer(SMOL, extra_args=["--kv-budget", "1400M", "--grpc-port", grpc_port, "--ctx-size", ctx,
                                        "--attention", args.attention],
                      env={"STRIDE_MAX_PROMPT_TOKENS": str(ctx), "STRIDE_MAX_BODY_BYTES": str(64 << 20),
                           "STRIDE_PREFILL_CHUNK": "512"}) as srv:
        # A prompt of exactly --tokens tokens, as text and as the ids the server makes of it.
        text = long_text(int(args.tokens * 1.2))
        ids = call(srv.port, "/tokenize", {"prompt": text})["body"]["tokens"][: args.tokens]
        text = call(srv.port, "/detokenize", {"tokens": ids})["body"]["prompt"]
        assert call(srv.port, "/tokenize", {"prompt": text})["body"]["tokens"] == ids, "text does not round-trip"
        t_cold, r = timed(lambda: call(srv.port, "/v1/completions", {"prompt": ids, "max_tokens": 1}, timeout=3600))
        assert r["status"] == 200, r
        print(f"cold prefill of {len(ids)} tokens: {t_cold:.1f} s", flush=True)

        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}",
                                        options=[("grpc.max_send_message_length", 64 << 20)])
        stub = pb_grpc.InferenceStub(channel)
        model = served_model(srv.port)
        json_text = json.dumps({"model": model, "prompt": text, "max_tokens": 1, "temperature": 0})
        json_ids = json.dumps({"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0})
        packed = pb.GenerateRequest(token_ids=pb.TokenIds(ids=ids), max_tokens=1)
        packed.sampling.temperature = 0

        def http_mode(body):
            def run():
                r = call(srv.port, "/v1/completions", body)
                assert r["status"] == 200, r
                return r["body"]["usage"]
            return run

        def grpc_mode():
            last = list(stub.Generate(packed, timeout=600))[-1]
            return {"prompt_tokens": last.usage.prompt_tokens,
                    "prompt_tokens_details": {"cached_tokens": last.usage.cached_tokens}}

        modes = {"JSON text": http_mode(json_text), "JSON ids": http_mode(json_ids), "gRPC packed ids": grpc_mode}
        sizes = {"JSON text": len(json_text), "JSON ids": len(json_ids), "gRPC packed ids": packed.ByteSize()}
        times = {m: [] for m in modes}
        cached = {}
        for _ in range(args.reps):
            for name, fn in modes.items():
                t, usage = timed(fn)
                times[name].append(t)
                cached[name] = usage["prompt_tokens_details"]["cached_tokens"]
        channel.close()

    med = {m: statistics.median(v) for m, v in times.items()}
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_name(), "load_average": os.getloadavg(), "model": os.path.basename(SMOL),
        "prompt_tokens": len(ids), "attention": args.attention, "cold_prefill_seconds": t_cold, "reps": args.reps,
        "request_bytes": sizes, "cached_tokens": cached, "seconds": times, "median_seconds": med,
        "ratio_to_grpc_ids": {m: med[m] / med["gRPC packed ids"] for m in med},
    }
    write_json(args.out + ".json", report)
    p = plt()
    fig, ax = p.subplots(figsize=(7, 4))
    names = list(med)
    ax.bar(names, [1000 * med[n] for n in names], color=["#e8590c", "#2f6fde", "#2b8a3e"])
    for i, n in enumerate(names):
        ax.text(i, 1000 * med[n], f"{1000 * med[n]:.0f} ms\n{sizes[n] / 1024:.0f} KiB\n"
                f"{report['ratio_to_grpc_ids'][n]:.2f}x", ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("median request time (ms)")
    ax.set_title(f"Submitting a {len(ids)}-token cached prompt, 1 output token ({report['cpu']})", fontsize=9)
    ax.set_ylim(0, 1000 * max(med.values()) * 1.35)
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=120)
    print(json.dumps({k: report[k] for k in ("prompt_tokens", "median_seconds", "ratio_to_grpc_ids",
                                              "request_bytes", "cached_tokens")}, indent=1))


if __name__ == "__main__":
    main()
