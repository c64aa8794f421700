#!/usr/bin/env python3
"""Soak test of `stride serve`: N concurrent clients for a fixed time with mixed
prompt lengths (log-uniform 10..4000 tokens), mixed sampling (greedy,
temperature, top_p; streaming and not; completions and chat), and a share of
clients that disconnect at a random point. Samples the server's RSS
(/proc/PID/status) and KV pages in use (/metrics) over time.

Pass criteria (printed, and the exit status): no failed request apart from the
deliberate disconnects; RSS after warm-up within 5% of its range; KV pages in
use back to the idle baseline at the end; p50/p99 latency per window (drift
is reported).

  ~/.cache/stride/venv/bin/python bench/soak.py [--minutes 30] [--clients 16] \
      [--disconnect 0.1] [--window-minutes 5] [--out bench/out/soak]
"""
import argparse
import os
import threading
import time

from serving_common import (OUT_DIR, SMOL, StrideServer, abandon, call, metrics, pct, plt, rng, rss_kb, stream,
                            text_prompt, token_prompt, wait_idle, write_json)


def make_request(r, args):
    """(path, body, streaming, kind) for one random request."""
    n_tok = int(round(10 ** r.uniform(1, 3.602)))  # 10 .. 4000 tokens, log-uniform
    mode = r.choice(["greedy", "temperature", "top_p"])
    body = {"max_tokens": r.randint(4, args.max_tokens)}
    if mode == "greedy":
        body["temperature"] = 0
    elif mode == "temperature":
        body.update(temperature=r.uniform(0.3, 1.5), seed=r.randrange(1 << 31))
    else:
        body.update(temperature=0.8, top_p=r.uniform(0.5, 0.99), seed=r.randrange(1 << 31))
    if r.random() < 0.3:
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": text_prompt(max(1, int(n_tok / 1.3)), r)}]
    else:
        path = "/v1/completions"
        body["prompt"] = token_prompt(n_tok, r) if r.random() < 0.5 else text_prompt(max(1, int(n_tok / 1.3)), r)
    streaming = r.random() < 0.5
    if streaming:
        body["stream_options"] = {"include_usage": True}
    return path, body, streaming, f"{mode}/{'stream' if streaming else 'json'}", n_tok


def client(idx, port, args, deadline, results, lock):
    r = rng(args.seed * 1000 + idx)
    while time.time() < deadline:
        path, body, streaming, kind, n_tok = make_request(r, args)
        disconnect = r.random() < args.disconnect
        t0 = time.time()
        rec = {"t": t0, "client": idx, "path": path, "kind": kind, "prompt_tokens_target": n_tok,
               "disconnect": disconnect, "ok": False, "error": None}
        if streaming:
            res = stream(port, path, body, disconnect_after=r.randint(1, 6) if disconnect else None)
            rec["latency"] = res["elapsed"]
            rec["ttft"] = res["ttft"]
            if disconnect:
                rec["ok"] = res["status"] == 200 and res["error"] is None
            else:
                rec["ok"] = (res["status"] == 200 and res["done"] and res["error"] is None and
                             res["error_event"] is None and res["finish_reason"] in ("stop", "length") and
                             res["usage"] is not None)
            if not rec["ok"]:
                rec["error"] = {k: res.get(k) for k in ("status", "error", "error_event", "done", "finish_reason",
                                                        "body")}
        elif disconnect:
            abandon(port, path, body, r.uniform(0.0, 1.5))
            rec["latency"] = time.time() - t0
            rec["ok"] = True
        else:
            res = call(port, path, body)
            rec["latency"] = res["elapsed"]
            b = res["body"] if isinstance(res["body"], dict) else {}
            rec["ok"] = res["status"] == 200 and b.get("choices") and \
                b["choices"][0].get("finish_reason") in ("stop", "length")
            if not rec["ok"]:
                rec["error"] = {"status": res["status"], "error": res["error"], "body": str(res["body"])[:500]}
        with lock:
            results.append(rec)


def sampler(pid, port, t_start, stop, samples):
    while not stop.is_set():
        m = metrics(port, timeout=5)
        samples.append({"t": time.time() - t_start, "rss_kb": rss_kb(pid),
                        "kv_pages_used": m.get("stride_kv_cache_pages_used"),
                        "kv_pages_cached": m.get("stride_kv_cache_pages_cached"),
                        "kv_pages_peak": m.get("stride_kv_cache_pages_peak"),
                        "kv_page_bytes": m.get("stride_kv_cache_page_bytes"),
                        "running": m.get("stride_num_requests_running"),
                        "waiting": m.get("stride_num_requests_waiting")})
        stop.wait(args_interval[0])


args_interval = [5.0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=SMOL)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--disconnect", type=float, default=0.1, help="share of requests abandoned at a random point")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--window-minutes", type=float, default=5)
    ap.add_argument("--warmup-share", type=float, default=0.2, help="share of the run excluded from the RSS check")
    ap.add_argument("--sample-s", type=float, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--kv-budget", default="512M")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "soak"))
    args = ap.parse_args()
    args_interval[0] = args.sample_s

    with StrideServer(args.model, threads=args.threads,
                      extra_args=["--kv-budget", args.kv_budget, "--max-batch", str(args.clients),
                                  "--max-queue", str(4 * args.clients)]) as srv:
        pid, port = srv.proc.pid, srv.port
        call(port, "/v1/completions", {"prompt": "warm up", "max_tokens": 2})
        base = wait_idle(port)
        baseline = {"kv_pages_used": base.get("stride_kv_cache_pages_used"), "rss_kb": rss_kb(pid)}
        results, lock, samples, stop = [], threading.Lock(), [], threading.Event()
        t_start = time.time()
        deadline = t_start + args.minutes * 60
        smp = threading.Thread(target=sampler, args=(pid, port, t_start, stop, samples), daemon=True)
        smp.start()
        threads = [threading.Thread(target=client, args=(i, port, args, deadline, results, lock))
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        last_print = t_start
        while any(t.is_alive() for t in threads):
            time.sleep(1)
            if time.time() - last_print >= 60:
                last_print = time.time()
                with lock:
                    n, bad = len(results), sum(1 for x in results if not x["ok"])
                s = samples[-1] if samples else {}
                print(f"[soak] {(time.time() - t_start) / 60:5.1f} min  requests {n}  failures {bad}  "
                      f"rss {s.get('rss_kb')} KiB  kv pages {s.get('kv_pages_used')}", flush=True)
        for t in threads:
            t.join()
        end = wait_idle(port, timeout=120)
        time.sleep(1)
        end = metrics(port) or end
        stop.set()
        smp.join()
        alive = srv.proc.poll() is None
        health = call(port, "/health", method="GET")["status"] if alive else None

    wall = time.time() - t_start
    window = args.window_minutes * 60
    windows = []
    for w in range(max(1, int((wall + window - 1e-9) // window))):
        lat = [x["latency"] for x in results if w * window <= x["t"] - t_start < (w + 1) * window
               and x["ok"] and not x["disconnect"]]
        windows.append({"window": w, "start_min": w * args.window_minutes, "requests": len(lat),
                        "p50_s": pct(lat, 50), "p99_s": pct(lat, 99)})
    warm_t = wall * args.warmup_share
    rss_after = [s["rss_kb"] for s in samples if s["t"] >= warm_t and s["rss_kb"]]
    rss_spread = (max(rss_after) - min(rss_after)) / min(rss_after) if rss_after else None
    # RSS growth after warm-up against the KV pool pages touched for the first time
    # (the pool is allocated up front but its pages become resident when first used).
    after = [x for x in samples if x["t"] >= warm_t and x["rss_kb"] and x["kv_pages_peak"] is not None]
    rss_growth_kb = (after[-1]["rss_kb"] - after[0]["rss_kb"]) if len(after) > 1 else None
    def touched(x):  # pool pages used at least once so far: in use now, cached, or the in-use peak
        return max(x["kv_pages_peak"] or 0, x["kv_pages_cached"] or 0)
    kv_first_touch_kb = ((touched(after[-1]) - touched(after[0])) * (after[-1]["kv_page_bytes"] or 0)
                         / 1024) if len(after) > 1 else None
    # RSS once every pool page has been touched (the prefix cache fills the pool over time).
    capacity = end.get("stride_kv_cache_pages_capacity") or 0
    full = [x["rss_kb"] for x in samples if x["rss_kb"] and capacity and touched(x) >= 0.99 * capacity]
    rss_spread_pool_touched = (max(full) - min(full)) / min(full) if len(full) > 1 else None
    failures = [x for x in results if not x["ok"]]
    deliberate = sum(1 for x in results if x["disconnect"])
    end_pages = end.get("stride_kv_cache_pages_used")
    checks = {
        "no_failures": not failures,
        "rss_flat_within_5pct_after_warmup": rss_spread is not None and rss_spread <= 0.05,
        "kv_pages_back_to_baseline": end_pages is not None and end_pages <= (baseline["kv_pages_used"] or 0),
        "server_alive_and_healthy": alive and health == 200,
    }
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "model": os.path.basename(args.model),
              "args": vars(args), "wall_s": wall, "requests": len(results), "deliberate_disconnects": deliberate,
              "failures": len(failures), "failure_examples": failures[:10], "baseline": baseline,
              "end": {"kv_pages_used": end_pages, "kv_pages_cached": end.get("stride_kv_cache_pages_cached"),
                      "kv_pages_peak": end.get("stride_kv_cache_pages_peak"),
                      "kv_pages_capacity": end.get("stride_kv_cache_pages_capacity"),
                      "http": {k: v for k, v in end.items() if k.startswith("stride_http_requests_total")},
                      "finished": {k: v for k, v in end.items() if k.startswith("stride_request_success_total")}},
              "rss_spread_after_warmup": rss_spread, "rss_kb_min_max_after_warmup":
                  [min(rss_after), max(rss_after)] if rss_after else None,
              "rss_spread_after_pool_touched": rss_spread_pool_touched,
              "rss_kb_min_max_after_pool_touched": [min(full), max(full)] if full else None,
              "rss_growth_after_warmup_kb": rss_growth_kb, "kv_peak_growth_after_warmup_kb": kv_first_touch_kb,
              "windows": windows, "checks": checks, "samples": samples,
              "requests_detail": [{k: x[k] for k in ("t", "kind", "path", "prompt_tokens_target", "disconnect", "ok",
                                                     "latency")} for x in results]}
    write_json(args.out + ".json", report)

    p = plt()
    fig, ax = p.subplots(1, 3, figsize=(16, 4))
    ts = [s["t"] / 60 for s in samples]
    ax[0].plot(ts, [(s["rss_kb"] or 0) / 1024 for s in samples])
    ax[0].axvline(warm_t / 60, ls=":", c="gray")
    ax[0].set(title="server RSS (MiB)", xlabel="minutes")
    ax[1].plot(ts, [s["kv_pages_used"] or 0 for s in samples], label="used")
    ax[1].plot(ts, [s["kv_pages_cached"] or 0 for s in samples], label="cached")
    ax[1].axhline(baseline["kv_pages_used"] or 0, ls=":", c="gray", label="baseline")
    ax[1].set(title="KV pages", xlabel="minutes")
    ax[1].legend()
    ok = [x for x in results if x["ok"] and not x["disconnect"]]
    ax[2].scatter([(x["t"] - t_start) / 60 for x in ok], [x["latency"] for x in ok], s=3, alpha=0.4, label="request")
    filled = [w for w in windows if w["requests"]]
    mids = [w["start_min"] + args.window_minutes / 2 for w in filled]
    ax[2].plot(mids, [w["p50_s"] for w in filled], "o-", label="p50 per window")
    ax[2].plot(mids, [w["p99_s"] for w in filled], "x--", label="p99 per window")
    ax[2].set(title="latency (s) by start time", xlabel="minutes", yscale="log")
    ax[2].legend()
    fig.suptitle(f"soak {args.minutes} min, {args.clients} clients, {len(results)} requests, "
                 f"{len(failures)} failures, {report['date']}")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)

    print(f"[soak] {len(results)} requests in {wall / 60:.1f} min ({deliberate} deliberate disconnects), "
          f"{len(failures)} failures")
    print(f"[soak] RSS after warm-up {report['rss_kb_min_max_after_warmup']} KiB, spread "
          f"{(rss_spread or 0) * 100:.2f}%")
    print(f"[soak] RSS growth after warm-up {rss_growth_kb} KiB; KV pool pages first touched in that time "
          f"(max of cached and peak, x page bytes) {kv_first_touch_kb and round(kv_first_touch_kb)} KiB")
    print(f"[soak] RSS once every KV pool page was touched: {report['rss_kb_min_max_after_pool_touched']} KiB "
          f"over {len(full)} samples, spread {rss_spread_pool_touched and round(rss_spread_pool_touched * 100, 2)}%")
    print(f"[soak] KV pages used: baseline {baseline['kv_pages_used']}, end {end_pages}, peak "
          f"{report['end']['kv_pages_peak']} of {report['end']['kv_pages_capacity']}")
    for w in windows:
        print(f"[soak] window {w['window']} ({w['start_min']:.0f} min): {w['requests']} requests, "
              f"p50 {w['p50_s']} s, p99 {w['p99_s']} s")
    for f in failures[:5]:
        print(f"[soak] failure: {f['kind']} {f['path']} {f['error']}")
    for k, v in checks.items():
        print(f"[soak] {'PASS' if v else 'FAIL'} {k}")
    print(f"wrote {args.out}.json and {args.out}.png")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
