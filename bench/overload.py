#!/usr/bin/env python3
"""Overload of `stride serve` beyond its queue: with max_batch B and max_queue Q,
(1) a burst of many simultaneous requests: at most B + Q are admitted, every
other one gets 429 with a Retry-After header and the OpenAI error body, quickly;
(2) a sustained phase of C closed-loop clients for S seconds, each retrying
after a 429. In both, no admitted request fails: every 200 carries all its
tokens (ignore_eos) and finish_reason "length".

Writes JSON and a PNG (outcome of each request over time), prints a summary;
exit status 1 when a check fails.

  ~/.cache/stride/venv/bin/python bench/overload.py [--max-batch 2] [--max-queue 4] \
      [--burst 40] [--clients 24] [--seconds 30] [--out bench/out/overload]
"""
import argparse
import json
import os
import threading
import time

from serving_common import OUT_DIR, SMOL, StrideServer, call, metrics, plt, stream, wait_idle, write_json


def classify(res, max_tokens, streaming):
    """'ok', '429', or 'failed' with a reason."""
    if streaming:
        if res["status"] == 429:
            return "429", None
        good = (res["status"] == 200 and res["done"] and res["finish_reason"] == "length" and res["usage"] and
                res["usage"]["completion_tokens"] == max_tokens and not res["error_event"] and not res["error"])
        return ("ok", None) if good else ("failed", {k: res.get(k) for k in ("status", "error", "error_event",
                                                                              "finish_reason", "usage", "body")})
    if res["status"] == 429:
        return "429", None
    b = res["body"] if isinstance(res["body"], dict) else {}
    good = (res["status"] == 200 and b.get("choices") and b["choices"][0].get("finish_reason") == "length" and
            b.get("usage", {}).get("completion_tokens") == max_tokens)
    return ("ok", None) if good else ("failed", {"status": res["status"], "error": res["error"],
                                                 "body": str(res["body"])[:300]})


def check_429(res):
    """A 429 must have Retry-After (a non-negative integer) and the OpenAI error body."""
    ra = {k.lower(): v for k, v in res.get("headers", {}).items()}.get("retry-after")
    body = res.get("body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            pass
    shape = isinstance(body, dict) and set(body.get("error", {})) == {"message", "type", "param", "code"} and \
        body["error"]["type"] == "rate_limit_error"
    return ra is not None and ra.isdigit() and shape, ra, (body or {}).get("error", {}).get("code") \
        if isinstance(body, dict) else body


def one(port, i, max_tokens, t0, out, lock, streaming):
    body = {"prompt": f"Request {i} tells a story:", "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
    start = time.time()
    if streaming:
        res = stream(port, "/v1/completions", dict(body, stream_options={"include_usage": True}))
        # stream() does not keep headers; a 429 is re-checked with a plain call below when needed.
        res["headers"] = {}
    else:
        res = call(port, "/v1/completions", body)
    kind, why = classify(res, max_tokens, streaming)
    rec = {"i": i, "start": start - t0, "elapsed": res["elapsed"], "outcome": kind, "status": res["status"],
           "streaming": streaming, "why": why}
    if kind == "429" and not streaming:
        rec["retry_after_ok"], rec["retry_after"], rec["code"] = check_429(res)
    with lock:
        out.append(rec)
    return rec


def burst(port, n, max_tokens):
    out, lock, t0 = [], threading.Lock(), time.time()
    gate = threading.Barrier(n)

    def go(i):
        gate.wait()
        one(port, i, max_tokens, t0, out, lock, streaming=(i % 2 == 1))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def sustained(port, clients, seconds, max_tokens):
    out, lock, t0 = [], threading.Lock(), time.time()
    deadline = t0 + seconds

    def loop(c):
        i = 0
        while time.time() < deadline:
            rec = one(port, c * 100000 + i, max_tokens, t0, out, lock, streaming=(i % 2 == 1))
            i += 1
            if rec["outcome"] == "429":
                time.sleep(0.05)  # a client that honours Retry-After would wait longer; this one keeps pressing

    threads = [threading.Thread(target=loop, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def summarize(name, recs, b, q):
    ok = [r for r in recs if r["outcome"] == "ok"]
    rej = [r for r in recs if r["outcome"] == "429"]
    failed = [r for r in recs if r["outcome"] == "failed"]
    rej_plain = [r for r in rej if not r["streaming"]]
    s = {"phase": name, "requests": len(recs), "admitted_ok": len(ok), "rejected_429": len(rej),
         "failed": len(failed), "failed_examples": [r["why"] for r in failed[:5]],
         "429_with_retry_after": sum(1 for r in rej_plain if r.get("retry_after_ok")),
         "429_checked": len(rej_plain), "retry_after_values": sorted({r.get("retry_after") for r in rej_plain}
                                                                     - {None}),
         "429_codes": sorted({str(r.get("code")) for r in rej_plain}),
         "reject_p50_s": sorted(r["elapsed"] for r in rej)[len(rej) // 2] if rej else None,
         "admitted_p50_s": sorted(r["elapsed"] for r in ok)[len(ok) // 2] if ok else None}
    print(f"[overload] {name}: {len(recs)} requests, {len(ok)} admitted and complete, {len(rej)} got 429 "
          f"({s['429_with_retry_after']}/{len(rej_plain)} checked with Retry-After {s['retry_after_values']}, "
          f"codes {s['429_codes']}), {len(failed)} failed; 429 p50 {s['reject_p50_s']} s, admitted p50 "
          f"{s['admitted_p50_s']} s", flush=True)
    for w in s["failed_examples"]:
        print(f"[overload]   failed: {w}")
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=SMOL)
    ap.add_argument("--max-batch", type=int, default=2)
    ap.add_argument("--max-queue", type=int, default=4)
    ap.add_argument("--burst", type=int, default=40)
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "overload"))
    args = ap.parse_args()
    b, q = args.max_batch, args.max_queue
    with StrideServer(args.model, threads=args.threads,
                      extra_args=["--max-batch", str(b), "--max-queue", str(q), "--kv-budget", "64M"]) as srv:
        call(srv.port, "/v1/completions", {"prompt": "warm", "max_tokens": 2})
        br = burst(srv.port, args.burst, args.max_tokens)
        wait_idle(srv.port)
        su = sustained(srv.port, args.clients, args.seconds, args.max_tokens)
        end = wait_idle(srv.port)
        alive = srv.proc.poll() is None
        http_counts = {k: v for k, v in (metrics(srv.port) or end).items() if k.startswith("stride_http_requests")}
    s_burst, s_sus = summarize("burst", br, b, q), summarize("sustained", su, b, q)
    checks = {
        "burst: extra requests got 429": s_burst["rejected_429"] > 0,
        "burst: admitted at most max_batch + max_queue (+1 in flight)": s_burst["admitted_ok"] <= b + q + 1,
        "no admitted request failed": s_burst["failed"] == 0 and s_sus["failed"] == 0,
        "every checked 429 has Retry-After and the error body":
            s_burst["429_with_retry_after"] == s_burst["429_checked"] and
            s_sus["429_with_retry_after"] == s_sus["429_checked"],
        "sustained: requests were admitted": s_sus["admitted_ok"] > 0,
        "server alive": alive,
    }
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "args": vars(args),
              "burst": s_burst, "sustained": s_sus, "http": http_counts, "checks": checks,
              "requests": {"burst": br, "sustained": su}}
    write_json(args.out + ".json", report)
    p = plt()
    fig, ax = p.subplots(1, 2, figsize=(14, 4))
    for a, recs, title in ((ax[0], br, "burst"), (ax[1], su, "sustained")):
        for kind, color in (("ok", "tab:green"), ("429", "tab:orange"), ("failed", "tab:red")):
            rs = [r for r in recs if r["outcome"] == kind]
            a.scatter([r["start"] for r in rs], [r["elapsed"] for r in rs], s=8, c=color, label=f"{kind} ({len(rs)})")
        a.set(title=f"{title}: max_batch {b}, max_queue {q}", xlabel="start (s)", ylabel="latency (s)", yscale="log")
        a.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)
    for k, v in checks.items():
        print(f"[overload] {'PASS' if v else 'FAIL'} {k}")
    print(f"wrote {args.out}.json and {args.out}.png")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
