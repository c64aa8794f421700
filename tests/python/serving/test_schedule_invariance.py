"""Same request, same answer, against the real server: greedy tokens and
log-probs (the chosen token's and the top 5) are byte-identical to a solo,
uncached run of the same request whatever the schedule:
  - prefill in chunks of 7 (STRIDE_PREFILL_CHUNK);
  - batched: every request sent at once, staggered, so later ones join while
    earlier ones decode;
  - a partial prefix hit (an earlier prompt shared the first P tokens) and a
    whole hit (the same prompt again) against cache_reuse false;
  - a hit restored from the offload tier (RAM and file, f16 and int8 KV)
    after other prompts evicted its pages.
Shared prefixes P sit around the window and page sizes (W-1, W, W+1, 2W+17).
Cases: the tiny HF models with every policy kind and their native windows,
and both real models. The engine-level matrix is
tests/unit/engine/test_schedule_invariance.cpp."""
import json
import os
import threading
import time

import pytest

from conftest import GEN
from stride_server import GEMMA, SMOL, StrideServer

TINY = os.path.join(GEN, "tiny")
MAX_TOKENS = 6


def tiny(name):
    return os.path.join(TINY, name, "model-f32.gguf")


# (id, model, env, page, W)
TINY_ENV = {"STRIDE_PAGE_SIZE": "4"}
CASES = [
    ("tiny-llama-dense", tiny("llama"), {"STRIDE_ATTENTION": "dense"}, 4, 8),
    ("tiny-llama-window", tiny("llama"), {"STRIDE_ATTENTION": "window:size=8"}, 4, 8),
    ("tiny-llama-rswa-abs", tiny("llama"), {"STRIDE_ATTENTION": "rswa:sinks=2,window=8,pos=abs"}, 4, 8),
    ("tiny-llama-rswa-rel", tiny("llama"), {"STRIDE_ATTENTION": "rswa:sinks=2,window=8,pos=rel"}, 4, 8),
    ("tiny-llama-strided", tiny("llama"), {"STRIDE_ATTENTION": "strided:window=8,stride=3,globals=2,block=4"}, 4, 8),
    ("tiny-llama-topk", tiny("llama"), {"STRIDE_ATTENTION": "topk:sparsity=0.5,block=4,sinks=4,window=8"}, 4, 8),
    ("tiny-mistral-native", tiny("mistral"), {}, 4, 8),
    ("tiny-gemma3-native", tiny("gemma3"), {}, 4, 8),
    ("smol-dense", SMOL, {}, 32, 32),
    ("smol-rswa", SMOL, {"STRIDE_ATTENTION": "rswa:sinks=4,window=64"}, 32, 64),
    ("smol-topk", SMOL, {"STRIDE_ATTENTION": "topk:sparsity=0.5"}, 32, 64),
    ("gemma-native", GEMMA, {}, 32, 512),
]


def ids(n, seed, vocab):
    x = seed * 2654435761 + 12345
    out = []
    for _ in range(n):
        x = (x * 1664525 + 1013904223) % (1 << 32)
        out.append(3 + (x >> 8) % (vocab - 3))
    return out


def complete(srv, prompt):
    status, _, body = srv.post("/v1/completions", {"model": srv.model_name, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0,
                                                    "logprobs": 5, "ignore_eos": True}, timeout=600)
    assert status == 200, body[:500]
    lp = json.loads(body)["choices"][0]["logprobs"]
    return lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]


def same(got, want, what):
    assert got[0] == want[0], f"{what}: tokens {got[0]} != {want[0]}"
    diffs = [abs(a - b) for a, b in zip(got[1], want[1])]
    assert got[1] == want[1], f"{what}: token log-probs differ by up to {max(diffs):.3g}"
    assert got[2] == want[2], f"{what}: top log-probs differ"


def server(model, case_env, page, extra=None):
    env = dict(TINY_ENV if page == 4 else {})
    env.update(case_env)
    env.update(extra or {})
    return StrideServer(model, env=env)


def kv_pages_of_one_request(srv):
    return srv.metrics()["stride_kv_cache_pages_cached"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_schedule_gives_the_solo_uncached_answer(case, tmp_path):
    _, model, case_env, page, W = case
    vocab = 256 if page == 4 else 8000
    suffix = 2 * page + 3
    prefixes = sorted({W - 1, W, W + 1, 2 * W + 17})
    base = {p: ids(p + suffix, 10 + p, vocab) for p in prefixes}
    partial = {p: base[p][:p] + ids(suffix, 20 + p, vocab) for p in prefixes}
    prompts = [base[p] for p in prefixes] + [partial[p] for p in prefixes]
    off = {"STRIDE_CACHE_REUSE": "false"}

    refs = {}
    for kv in ("f16", "int8"):
        with server(model, case_env, page, {**off, "STRIDE_KV_TYPE": kv}) as srv:
            refs[kv] = [complete(srv, p) for p in prompts]
            if kv == "f16":
                # Batched: all at once, 20 ms apart, so each joins a running batch.
                got = [None] * len(prompts)

                def one(i):
                    got[i] = complete(srv, prompts[i])
                threads = []
                for i in range(len(prompts)):
                    threads.append(threading.Thread(target=one, args=(i,)))
                    threads[-1].start()
                    time.sleep(0.02)
                for t in threads:
                    t.join()
                for i, g in enumerate(got):
                    same(g, refs[kv][i], f"batched request {i}")
    ref = dict(zip(map(tuple, prompts), refs["f16"]))

    # Real models: chunks of 33 over the base prompts (chunk 1 and 7 on them:
    # test_chunk_invariance.py and the engine matrix).
    chunk = 7 if page == 4 else 33
    with server(model, case_env, page, {**off, "STRIDE_PREFILL_CHUNK": str(chunk), "STRIDE_MAX_BATCH": "4"}) as srv:
        for i, p in enumerate(prompts if page == 4 else prompts[:len(prefixes)]):
            same(complete(srv, p), refs["f16"][i], f"chunks of {chunk}, prompt {i}")

    with server(model, case_env, page) as srv:
        for p in prefixes:
            complete(srv, partial[p])
            hits0 = srv.metrics()["stride_prefix_cache_hits_total"]
            same(complete(srv, base[p]), ref[tuple(base[p])], f"partial hit at P={p}")
            if p >= page:
                assert srv.metrics()["stride_prefix_cache_hits_total"] > hits0, f"no partial hit at P={p}"
            same(complete(srv, base[p]), ref[tuple(base[p])], f"whole hit at P={p}")

    # The tier: a pool of about two prompts; four others evict the first.
    longest = base[prefixes[-1]]
    fillers = [ids(len(longest), 30 + i, vocab) for i in range(4)]
    # Real models: f16 in RAM and int8 in a file; the tiny ones: all four.
    tiers = [("f16", "ram"), ("int8", "file")] if page != 4 else \
        [(kv, where) for kv in ("f16", "int8") for where in ("ram", "file")]
    for kv, where in tiers:
        with server(model, case_env, page, {"STRIDE_KV_TYPE": kv}) as probe:
            complete(probe, longest)
            pages = kv_pages_of_one_request(probe)
            bytes_per_page = _bytes_per_page(probe)
        tier = {"STRIDE_KV_TYPE": kv, "STRIDE_KV_BUDGET": str(int(2 * pages * bytes_per_page)),
                "STRIDE_KV_OFFLOAD_BYTES": str(64 << 20)}
        if where == "file":
            tier["STRIDE_KV_OFFLOAD_FILE"] = str(tmp_path / f"tier-{kv}.bin")
        with server(model, case_env, page, tier) as srv:
            complete(srv, longest)
            for f in fillers:
                complete(srv, f)
            got = complete(srv, longest)
            m = srv.metrics()
        assert m["stride_kv_offload_pages_offloaded_total"] > 0, f"{kv} {where}: nothing evicted to the tier"
        assert m["stride_kv_offload_pages_restored_total"] > 0, f"{kv} {where}: nothing restored"
        same(got, refs[kv][len(prefixes) - 1], f"tier {kv} {where}")


def _bytes_per_page(srv):
    """KV bytes of one pool page, from the start-up log line of the pool."""
    for line in srv.logs().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "kv_bytes" in rec and "kv_pages" in rec:
            return rec["kv_bytes"] / rec["kv_pages"]
    raise AssertionError("no kv_bytes/kv_pages start-up line")
