#!/usr/bin/env python3
"""Load sweep of an OpenAI-compatible server: streaming completions at
concurrency 1, 2, 4 ... at a fixed prompt length; throughput, TTFT and
inter-token latency percentiles, errors. Runs `stride serve` and (with
--llamacpp) llama-cpp-python's server on the same GGUF, one after the other
on the same machine, and writes JSON and a PNG.

With --baseline-bin, a second stride binary (an earlier build) serves beside
this one and every level alternates between the two, --reps times each, so a
change is compared under the same machine noise; the report adds the ratios.

  ~/.cache/stride/venv/bin/python bench/load_sweep.py --levels 1,2,4,8,16 \
      [--llamacpp] [--baseline-bin /tmp/stride-base --reps 3] [--max-tokens 32] [--out bench/out/load_sweep]
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from serving_common import DONE, sse_events  # noqa: E402
from stride_server import SMOL, StrideServer, free_port  # noqa: E402


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def one_stream(port, prompt, max_tokens, model):
    """Returns (ttft, [inter-token gaps], tokens, error) for one streamed completion."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True}
        conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            return None, [], 0, f"HTTP {r.status}"
        ttft, last, gaps, tokens = None, None, [], 0
        for obj in sse_events(r):
            if obj is DONE:
                break
            if not obj.get("choices") or not obj["choices"][0].get("text"):
                continue
            now = time.perf_counter()
            if ttft is None:
                ttft = now - t0
            else:
                gaps.append(now - last)
            last = now
            tokens += 1
        return ttft, gaps, tokens, None
    except Exception as e:  # noqa: BLE001 - a load test counts every failure
        return None, [], 0, repr(e)
    finally:
        conn.close()


def run_level(port, prompt, max_tokens, model, concurrency, rounds):
    results = []
    lock = threading.Lock()

    def worker():
        for _ in range(rounds):
            res = one_stream(port, prompt, max_tokens, model)
            with lock:
                results.append(res)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttfts = [r[0] for r in results if r[0] is not None]
    gaps = [g for r in results for g in r[1]]
    tokens = sum(r[2] for r in results)
    return {"concurrency": concurrency, "requests": len(results), "errors": sum(1 for r in results if r[3]),
            "error_examples": list({r[3] for r in results if r[3]})[:3], "tokens": tokens, "wall_s": wall,
            "tokens_per_s": tokens / wall if wall > 0 else 0, "ttft_p50": pct(ttfts, 50), "ttft_p99": pct(ttfts, 99),
            "itl_p50": pct(gaps, 50), "itl_p99": pct(gaps, 99)}


def sweep(name, port, prompt, args, model):
    out = []
    run_level(port, prompt, 4, model, 1, 1)  # warm-up
    for c in args.levels:
        r = run_level(port, prompt, args.max_tokens, model, c, args.rounds)
        print(f"[{name}] c={c:3d} {r['tokens_per_s']:8.1f} tok/s  ttft p50 {r['ttft_p50']}  itl p50 {r['itl_p50']}  "
              f"errors {r['errors']}", flush=True)
        out.append(r)
    return out


def merge_levels(runs):
    """One level's repeated runs as one row: medians of the rates and latencies, sums of counts."""
    def median(xs):
        xs = sorted(x for x in xs if x is not None)
        return xs[len(xs) // 2] if xs else None
    row = {"concurrency": runs[0]["concurrency"], "reps": len(runs)}
    for k in ("requests", "errors", "tokens"):
        row[k] = sum(r[k] for r in runs)
    row["error_examples"] = [e for r in runs for e in r["error_examples"]][:3]
    for k in ("wall_s", "tokens_per_s", "ttft_p50", "ttft_p99", "itl_p50", "itl_p99"):
        row[k] = median([r[k] for r in runs])
    return row


def sweep_interleaved(servers, prompt, args, model):
    """servers: {name: port}. Each level runs on every server in turn, reps times."""
    for port in servers.values():
        run_level(port, prompt, 4, model, 1, 1)  # warm-up
    out = {name: [] for name in servers}
    for c in args.levels:
        runs = {name: [] for name in servers}
        for _ in range(args.reps):
            for name, port in servers.items():
                runs[name].append(run_level(port, prompt, args.max_tokens, model, c, args.rounds))
        for name in servers:
            r = merge_levels(runs[name])
            print(f"[{name}] c={c:3d} {r['tokens_per_s']:8.1f} tok/s  ttft p50 {r['ttft_p50']}  "
                  f"itl p50 {r['itl_p50']}  errors {r['errors']}", flush=True)
            out[name].append(r)
    return out


def ratios(new_rows, base_rows):
    out = []
    for n, b in zip(new_rows, base_rows):
        row = {"concurrency": n["concurrency"]}
        for k in ("tokens_per_s", "ttft_p50", "itl_p50", "itl_p99"):
            row[k] = n[k] / b[k] if n[k] and b[k] else None
        out.append(row)
    return out


def wait_http(port, path, timeout=180):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return True
        except OSError:
            time.sleep(0.2)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=SMOL)
    ap.add_argument("--levels", default="1,2,4,8,16,32,64")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--prompt-words", type=int, default=48, help="fixed prompt length (words)")
    ap.add_argument("--rounds", type=int, default=1, help="requests per client per level")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--llamacpp", action="store_true", help="also sweep llama-cpp-python's server")
    ap.add_argument("--baseline-bin", default=None, help="an earlier stride binary, swept interleaved with this one")
    ap.add_argument("--reps", type=int, default=3, help="with --baseline-bin: alternations per level")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "load_sweep"))
    args = ap.parse_args()
    args.levels = [int(x) for x in args.levels.split(",")]
    prompt = " ".join(["The history of the city and its rivers"] * (args.prompt_words // 8 + 1)).split()
    prompt = " ".join(prompt[:args.prompt_words])
    model_id = os.path.basename(args.model)
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "model": model_id,
              "max_tokens": args.max_tokens, "prompt_words": args.prompt_words, "threads": args.threads,
              "servers": {}}

    max_batch = max(args.levels)
    serve_args = ["--max-batch", str(min(max_batch, 64)), "--max-queue", "1024", "--kv-budget", "1G"]
    if args.baseline_bin:
        own_bin = os.environ.get("STRIDE_BIN")
        os.environ["STRIDE_BIN"] = os.path.abspath(args.baseline_bin)
        with StrideServer(args.model, threads=args.threads, extra_args=serve_args) as base:
            if own_bin is None:
                del os.environ["STRIDE_BIN"]
            else:
                os.environ["STRIDE_BIN"] = own_bin
            with StrideServer(args.model, threads=args.threads, extra_args=serve_args) as srv:
                rows = sweep_interleaved({"stride-baseline": base.port, "stride": srv.port}, prompt, args, model_id)
        report["servers"].update(rows)
        report["baseline_bin"] = os.path.abspath(args.baseline_bin)
        report["ratios_new_over_baseline"] = ratios(rows["stride"], rows["stride-baseline"])
        for r in report["ratios_new_over_baseline"]:
            print(f"[new/baseline] c={r['concurrency']:3d} tok/s {r['tokens_per_s']}  itl p50 {r['itl_p50']}  "
                  f"itl p99 {r['itl_p99']}", flush=True)
    else:
        with StrideServer(args.model, threads=args.threads, extra_args=serve_args) as srv:
            report["servers"]["stride"] = sweep("stride", srv.port, prompt, args, model_id)

    if args.llamacpp:
        port = free_port()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", args.model, "--port", str(port),
               "--n_threads", str(args.threads), "--n_ctx", "4096",
               "--interrupt_requests", "False"]  # its default cancels a running stream when another arrives
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if wait_http(port, "/v1/models"):
                report["servers"]["llama-cpp-python"] = sweep("llama-cpp-python", port, prompt, args, model_id)
            else:
                report["servers"]["llama-cpp-python"] = {"error": "server did not start"}
        finally:
            p.terminate()
            p.wait(30)

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        for name, rows in report["servers"].items():
            if not isinstance(rows, list):
                continue
            cs = [r["concurrency"] for r in rows]
            axes[0].plot(cs, [r["tokens_per_s"] for r in rows], "o-", label=name)
            axes[1].plot(cs, [r["ttft_p50"] or 0 for r in rows], "o-", label=name + " p50")
            axes[1].plot(cs, [r["ttft_p99"] or 0 for r in rows], "x--", label=name + " p99")
            axes[2].plot(cs, [r["itl_p50"] or 0 for r in rows], "o-", label=name + " p50")
            axes[2].plot(cs, [r["itl_p99"] or 0 for r in rows], "x--", label=name + " p99")
        for ax, t in zip(axes, ["throughput (tokens/s)", "TTFT (s)", "inter-token latency (s)"]):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrent streams")
            ax.set_title(t)
            ax.legend()
        fig.suptitle(f"{model_id}, prompt {args.prompt_words} words, {args.max_tokens} tokens, {report['date']}")
        fig.tight_layout()
        fig.savefig(args.out + ".png", dpi=100)
    except ImportError:
        pass
    print(f"wrote {args.out}.json")


if __name__ == "__main__":
    main()
