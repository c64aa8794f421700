"""A shard set's request that one rank cannot hold: `stride serve` on loopback, rank 0 the HTTP
server, rank 1 a worker started with a KV pool too small for a long prompt's last shard (7 MB:
298 pages of SmolLM2, 9 pages of positions on each of its 30 layers).

With --shard-tokens 256 a 1024-token prompt leaves the worker [256, 1024) (24 pages a layer): its
pool cannot reserve them. The ranks agree on whether each took its part before any page travels,
so the request fails on every rank at once (not at the group's 60 s deadline) with an error that
names the worker and its pool; no rank holds a page afterwards; the set stays connected in the same
generation (nothing to rebuild), and the next prompt, 2 x 256 tokens, is served with the one host's
text and log-probabilities, bit for bit."""
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


def complete(server, ids):
    c = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
    return c.completions.create(model=server.model_name, prompt=ids, max_tokens=N_NEW, temperature=0, logprobs=0,
                                extra_body={"ignore_eos": True})


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


def test_a_rank_that_cannot_hold_its_shard_fails_the_request_at_once_and_the_set_serves_on(tmp_path):
    meet = tmp_path / "rendezvous"
    meet.mkdir()
    log = tmp_path / "worker.log"
    ids = [int(i) for i in prompt_ids(4 * SEGMENT)]
    fits = ids[:2 * SEGMENT]
    want = one_host_run([str(i) for i in fits], N_NEW)
    worker = subprocess.Popen([binary(), "serve", "-m", SMOL, "--threads", "1", "--kv-budget", WORKER_KV]
                              + shard_args(meet, 1), stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    server = StrideServer(extra_args=shard_args(meet, 0) + ["--shard-min-tokens", str(SEGMENT),
                                                            "--shard-tokens", str(SEGMENT)], threads=1)
    try:
        deadline = time.monotonic() + 120
        while server.metrics().get("stride_shard_set_connected") != 1:
            assert time.monotonic() < deadline, server.logs()[-3000:]
            time.sleep(0.2)
        generation = server.metrics()["stride_shard_set_generation"]

        t0 = time.monotonic()
        with pytest.raises(openai.APIStatusError) as refused:
            complete(server, ids)
        elapsed = time.monotonic() - t0
        message = refused.value.message
        # The worker's own reason, on rank 0: its pool of 298 pages, all free, and what the shard needs.
        assert "shard rank 1 of 2 cannot take its part of the request: KV pool exhausted" in message, message
        assert "298 free of 298" in message, message
        assert elapsed < 20, f"the request took {elapsed:.1f} s to fail (the group's deadline is 60 s)"
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
    finally:
        stop_set(server, [worker])
