"""A shard set's request that one rank cannot hold: `stride serve` on loopback, rank 0 the HTTP
server, rank 1 a worker started with a KV pool too small for a long prompt's last shard (7 MB:
298 pages of SmolLM2, 9 pages of positions on each of its 30 layers).

With --shard-tokens 256 a 1024-token prompt leaves the worker [256, 1024) (24 pages a layer): its
pool cannot reserve them. The ranks agree on whether each took its part before any page travels,
so the request fails on every rank at once (not at the group's 60 s deadline) with an error that
names the worker and its pool; no rank holds a page afterwards; the set stays connected in the same
generation (nothing to rebuild), and the next prompt, 2 x 256 tokens, is served with the one host's
text and log-probabilities, bit for bit.

A request whose prompt fits but whose max_tokens would fill the pool of the rank that keeps the
generated tokens (the last, here the worker) is refused the same way at admission (503): 2 x 256
tokens leave the worker 8 pages a layer, and 64 tokens to generate would take it to 10 (300 pages
of its 298). Without counting that growth the request would start and fail the group mid-decode."""
import re
import subprocess
import time

import openai
import pytest

from shard_ranks import SEGMENT, one_host_run, prompt_ids, stop_set
from stride_server import SMOL, StrideServer, binary

N_NEW = 8
TIMEOUT_MS = 60000
WORKER_KV = "7M"


def shard_args(meet, rank):
    return ["--shard-world", "2", "--rendezvous", f"file:{meet}", "--shard-prefix", "admission-test",
            "--shard-timeout-ms", str(TIMEOUT_MS), "--shard-rank", str(rank)]


def complete(server, ids, max_tokens=N_NEW):
    c = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
    return c.completions.create(model=server.model_name, prompt=ids, max_tokens=max_tokens, temperature=0,
                                logprobs=0, extra_body={"ignore_eos": True})


def worker_lines(log, n, timeout=30):
    """The worker's first n request lines, once it logged them."""
    deadline = time.monotonic() + timeout
    pattern = re.compile(r"shard rank 1/2: request \S+: (.*)")
    while True:
        found = pattern.findall(log.read_text())
        if len(found) >= n or time.monotonic() > deadline:
            assert len(found) >= n, log.read_text()[-3000:]
            return found[:n]
        time.sleep(0.1)


def start_set(tmp_path):
    """Rank 0 (a StrideServer) and the small-pool worker, connected: (server, worker, its log, generation)."""
    meet = tmp_path / "rendezvous"
    meet.mkdir()
    log = tmp_path / "worker.log"
    worker = subprocess.Popen([binary(), "serve", "-m", SMOL, "--threads", "1", "--kv-budget", WORKER_KV]
                              + shard_args(meet, 1), stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    server = StrideServer(extra_args=shard_args(meet, 0) + ["--shard-min-tokens", str(SEGMENT),
                                                            "--shard-tokens", str(SEGMENT)], threads=1)
    deadline = time.monotonic() + 120
    while server.metrics().get("stride_shard_set_connected") != 1:
        if time.monotonic() > deadline:
            logs = server.logs()[-3000:]
            stop_set(server, [worker])
            pytest.fail("the shard set did not connect: " + logs)
        time.sleep(0.2)
    return server, worker, log, server.metrics()["stride_shard_set_generation"]


def assert_refused_at_once(server, ids, max_tokens, reason):
    """The request fails on every rank at once with the worker's own reason, relayed by rank 0."""
    t0 = time.monotonic()
    with pytest.raises(openai.APIStatusError) as refused:
        complete(server, ids, max_tokens)
    elapsed = time.monotonic() - t0
    message = refused.value.message
    assert refused.value.status_code == 503, (refused.value.status_code, message)
    assert "shard rank 1 of 2 cannot take its part of the request: " + reason in message, message
    assert elapsed < 20, f"the request took {elapsed:.1f} s to fail (the group's deadline is 60 s)"
    return message


def assert_serves_on(server, log, generation, fits, want):
    """After the refusal: no page held, the same generation, and the next request is the one host's."""
    m = server.metrics()
    assert m["stride_kv_cache_pages_used"] == 0
    assert m["stride_sharded_request_failures_total"] == 1
    assert m["stride_shard_set_connected"] == 1 and m["stride_shard_set_generation"] == generation
    failed = worker_lines(log, 1)[0]
    assert "shard rank 1 of 2 cannot take its part of the request: KV pool exhausted" in failed, failed
    assert ", 0 KV pages held" in failed, failed

    r = complete(server, fits)
    assert r.choices[0].text == want["text"]
    assert r.choices[0].logprobs.token_logprobs == want["logprobs"]
    assert re.search(r"\bdone, 8 tokens, \d+ prompt tokens reused, 0 KV pages held", worker_lines(log, 2)[1])
    assert server.metrics()["stride_kv_cache_pages_used"] == 0
    assert server.metrics()["stride_shard_set_generation"] == generation


def test_a_rank_that_cannot_hold_its_shard_fails_the_request_at_once_and_the_set_serves_on(tmp_path):
    ids = [int(i) for i in prompt_ids(4 * SEGMENT)]
    fits = ids[:2 * SEGMENT]
    want = one_host_run([str(i) for i in fits], N_NEW)
    server, worker, log, generation = start_set(tmp_path)
    try:
        message = assert_refused_at_once(server, ids, N_NEW, "KV pool exhausted")
        assert "298 free of 298" in message, message  # its pool of 298 pages, all free
        assert_serves_on(server, log, generation, fits, want)
    finally:
        stop_set(server, [worker])


def test_a_generation_that_would_fill_the_last_ranks_pool_is_refused_at_admission(tmp_path):
    fits = [int(i) for i in prompt_ids(2 * SEGMENT)]
    want = one_host_run([str(i) for i in fits], N_NEW)
    server, worker, log, generation = start_set(tmp_path)
    try:
        # 63 decode steps take the worker's 8 pages a layer to 10: 60 more pages, 58 free after its prefill's 240.
        message = assert_refused_at_once(server, fits, 64, "KV pool exhausted: the 64 tokens to generate need 60 more")
        assert "58 free of 298" in message, message
        assert_serves_on(server, log, generation, fits, want)
    finally:
        stop_set(server, [worker])
