#!/usr/bin/env python3
"""How long stride's threads sleep during a prefill (workers waiting between dispatches), measured so
that a loaded machine does not count as sleep.

Each thread's /proc/<pid>/task/<tid>/schedstat gives its on-CPU time and its run-queue wait (runnable,
not running: the neighbours' share); its lifetime minus both is the time it slept. The prefill's part
is the difference of a P-token and a P0-token run of `stride run --prompt-ids ... -n 1` (loading and
warm-up drop out), summed over threads. Reported: CPU, run-queue wait and sleep seconds, and
sleep / (CPU + sleep), the share of the threads' own time they spent idle. On a loaded machine a
thread descheduled in the middle of a dispatch makes the other one wait at the barrier, so sleep
there is an upper bound; run it quiet for the figure.

  ~/.cache/stride/venv/bin/python bench/prefill_idle.py --stride build/stride \
      --model ~/.cache/stride/shaped/llama3.2-1b-q4_k_m.gguf [--path avx512] [--threads 2] [--reps 3]
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np


def run(a, ids):
    """(cpu s, run-queue wait s, sleep s, prefill wall s) of one `stride run`, summed over its threads."""
    env = dict(os.environ, STRIDE_CPU=a.path)
    p = subprocess.Popen([a.stride, "run", "-m", a.model, "--prompt-ids", " ".join(map(str, ids)), "-n", "1",
                          "--temperature", "0", "--ignore-eos", "--json", "--threads", str(a.threads)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    seen = {}  # tid -> (first seen, last seen, cpu ns, wait ns)
    while p.poll() is None:
        now = time.monotonic()
        try:
            tids = os.listdir(f"/proc/{p.pid}/task")
        except OSError:
            break
        for tid in tids:
            try:
                with open(f"/proc/{p.pid}/task/{tid}/schedstat") as f:
                    cpu, wait, _ = map(int, f.read().split())
            except (OSError, ValueError):
                continue
            seen[tid] = (seen.get(tid, (now,))[0], now, cpu, wait)
        time.sleep(a.poll_ms / 1e3)
    out = p.stdout.read().decode()
    if p.wait() != 0:
        raise SystemExit(f"{a.stride} run failed")
    prefill = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])["prefill_seconds"]
    cpu = sum(v[2] for v in seen.values()) / 1e9
    wait = sum(v[3] for v in seen.values()) / 1e9
    life = sum(v[1] - v[0] for v in seen.values())
    return cpu, wait, life - cpu - wait, prefill


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stride", default="build/stride")
    ap.add_argument("--model", required=True)
    ap.add_argument("--path", default="avx512", choices=["avx2", "avx512", "amx"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--short-prompt", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--poll-ms", type=float, default=10.0)
    a = ap.parse_args()
    ids = np.random.default_rng(1234).integers(259, 30000, a.prompt).tolist()
    print(f"load average {os.getloadavg()[0]:.1f}")
    for rep in range(a.reps):
        long, short = run(a, ids), run(a, ids[:a.short_prompt])
        cpu, wait, sleep, wall = (x - y for x, y in zip(long, short))
        print(f"rep {rep + 1}: prefill of {a.prompt - a.short_prompt} tokens: cpu {cpu:.2f} s, run-queue wait "
              f"{wait:.2f} s, asleep {sleep:.2f} s, wall {wall:.2f} s; asleep / (cpu + asleep) "
              f"{sleep / (cpu + sleep):.3f}", flush=True)


if __name__ == "__main__":
    main()
