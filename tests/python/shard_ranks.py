"""Helpers for the shard-set tests (tests/python/dist): a prompt of SmolLM2
token ids, the rank processes of one `stride` command, and waiting on them."""
import json
import os
import subprocess
import time

import numpy as np
import pytest

from stride_server import SMOL, binary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = 32
SEGMENT = 8 * PAGE  # attention/work_partition.h: kSegmentPages pages
N_NEW = 24  # tokens the generation tests decode


def prompt_ids(n):
    """The first n token ids of docs/serving.md (strings)."""
    text = open(os.path.join(ROOT, "docs", "serving.md")).read()
    r = subprocess.run([binary(), "tokenize", "-m", SMOL, "-p", text], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ids = r.stdout.split()
    assert len(ids) >= n
    return ids[:n]


def start_ranks(args_of_rank, world, meet, timeout_ms=60000, wrap=lambda rank, cmd: cmd):
    """The shard set's processes, started at once: `stride ARGS --shard-world ...` for each rank,
    meeting in the directory `meet`; stdout and stderr piped (rank r's 'connected' line on stderr).
    wrap(rank, cmd) may prefix a rank's command (ip netns exec ...)."""
    meet.mkdir(exist_ok=True)
    procs = []
    for rank in range(world):
        cmd = [binary()] + args_of_rank(rank) + ["--shard-world", str(world), "--shard-rank", str(rank),
                                                 "--rendezvous", f"file:{meet}", "--shard-timeout-ms", str(timeout_ms)]
        procs.append(subprocess.Popen(wrap(rank, cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      stdin=subprocess.DEVNULL))
    return procs


def finish(procs, timeout=600):
    """[(returncode, stdout, stderr)] of every rank; none may outlive the timeout."""
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


def wait_connected(proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "connected" in line:
            return
        assert line or proc.poll() is None, f"rank exited before connecting: {proc.returncode}"
    pytest.fail("rank did not connect")


def model_info():
    """SmolLM2's shape as `stride info --json` gives it."""
    r = subprocess.run([binary(), "info", "--model", SMOL, "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    return info.get("config", info)


def page_image_bytes(info):
    """K and V of every kv head of a 32-token f16 page, and the slots' int32 positions (kv/store/kv_pool.h)."""
    kv_heads = info["n_head_kv"]
    return PAGE * kv_heads * (info["head_dim"] + info["head_dim_v"]) * 2 + PAGE * 4


def sees(policy, q_first, q_last, k_first, k_last):
    """Can a query in [q_first, q_last] see a key in [k_first, k_last]? The policies' published
    meaning (docs/policies.md): causal; R-SWA's sinks and window; dense and top-k with
    prefill=dense (whose candidates are every causal key) see every earlier key."""
    if k_first > q_last:
        return False
    if policy.startswith("rswa"):
        opts = dict(kv.split("=") for kv in policy.split(":")[1].split(","))
        return k_first < int(opts["sinks"]) or k_last > q_first - int(opts["window"])
    return True


def ring_bytes_per_layer(policy, shards, rank, info):
    """What `rank` sends in one layer's ring prefill: 24 bytes per rank agreeing on every rank's
    positions and where its queries begin, then at step s the pages of rank - s that the next
    rank's queries can see (none from the last rank, none past it)."""
    image, total = page_image_bytes(info), 24 * len(shards)
    for s in range(len(shards) - 1):
        origin, receiver = rank - s, rank + 1
        if origin < 0 or receiver >= len(shards):
            continue
        (ob, oe), (rb, re_) = shards[origin], shards[receiver]
        total += sum(image for p in range(ob, oe, PAGE) if sees(policy, rb, re_ - 1, p, min(p + PAGE, oe) - 1))
    return total


def one_host_logits(ids, tmp_path, policy="dense", kv="f16"):
    """`stride score` of ids on one host: [n, n_vocab]."""
    out = tmp_path / f"one-{kv}.f32"
    r = subprocess.run([binary(), "score", "-m", SMOL, "--ids", " ".join(ids), "--attention", policy, "--kv-type", kv,
                        "--threads", "2", "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    meta = json.loads(r.stdout.strip().splitlines()[-1])
    return np.fromfile(out, dtype=np.float32).reshape(meta["n_tokens"], meta["n_vocab"])


def start_score_ranks(ids, world, tmp_path, policy="dense", timeout_ms=60000, extra=lambda rank: [],
                      wrap=lambda rank, cmd: cmd):
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text(" ".join(ids))
    return start_ranks(lambda rank: ["score", "-m", SMOL, "--ids-file", str(ids_file), "--attention", policy,
                                     "--threads", "1", "-o", str(tmp_path / "sharded.f32")] + extra(rank),
                       world, tmp_path / "rendezvous", timeout_ms, wrap)


def run_sharded_score(ids, world, tmp_path, policy="dense", **how):
    """The logits rank 0 wrote, [n, n_vocab], and every rank's JSON line."""
    results = finish(start_score_ranks(ids, world, tmp_path, policy, **how))
    for rank, (rc, _, err) in enumerate(results):
        assert rc == 0, f"rank {rank} exit {rc}: {err[-2000:]}"
    metas = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results]
    logits = np.fromfile(tmp_path / "sharded.f32", dtype=np.float32).reshape(len(ids), metas[0]["n_vocab"])
    return logits, metas


def one_host_run(ids, n_new, policy="dense", kv="f16"):
    """Greedy `stride run --json` of ids on one host."""
    r = subprocess.run([binary(), "run", "-m", SMOL, "--prompt-ids", " ".join(ids), "-n", str(n_new), "-a", policy,
                        "--kv-type", kv, "--temperature", "0", "--ignore-eos", "--threads", "2", "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def stop_set(server, workers):
    """Stops a shard set's rank 0 (a StrideServer) and its worker processes."""
    server.stop()
    os.unlink(server.log.name)
    for w in workers:
        if w.poll() is None:
            w.kill()
        w.wait()
