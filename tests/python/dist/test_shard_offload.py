"""The offload tier per rank of `stride serve`'s shard set: rank 0 the HTTP server, rank 1 a
worker, on loopback, each with a KV pool of 7 MB (298 pages of SmolLM2: 9 pages of positions on
each of its 30 layers) and a host tier of 64 MB behind it.

With --shard-tokens 256, request 1 (384 tokens) leaves rank 0's [0, 256) and rank 1's [256, 384)
pages in their prefix caches; request 2, 512 tokens differing at token 0, needs nearly every pool
page on both ranks, so the cached pages of request 1 are evicted into each rank's tier; request 3,
request 1's prompt and 128 more tokens, finds them there: each rank restores its own run, the set
reuses the first 384 positions, and the text and token log-probabilities are the one host's, bit
for bit. No rank holds a page afterwards."""
import re
import subprocess
import time

import openai

from shard_ranks import SEGMENT, one_host_run, prompt_ids, stop_set
from stride_server import SMOL, StrideServer, binary

N_NEW = 8
HALF = SEGMENT // 2


def shard_args(meet, rank):
    return ["--shard-world", "2", "--rendezvous", f"file:{meet}", "--shard-prefix", "offload-test",
            "--shard-timeout-ms", "60000", "--shard-rank", str(rank)]


def complete(server, ids):
    c = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
    return c.completions.create(model=server.model_name, prompt=ids, max_tokens=N_NEW, temperature=0, logprobs=0,
                                extra_body={"ignore_eos": True})


def worker_reused(log, n, timeout=30):
    """(prompt tokens reused, KV pages held after, pages restored from the tier) the worker logged for
    its first n requests."""
    deadline = time.monotonic() + timeout
    pattern = re.compile(r"shard rank 1/2: request \S+: done, \d+ tokens, (\d+) prompt tokens reused, (\d+) KV pages "
                         r"held, prefill \S+ CPU s, (\d+) KV pages restored from the offload tier")
    while True:
        found = pattern.findall(log.read_text())
        if len(found) >= n or time.monotonic() > deadline:
            assert len(found) >= n, log.read_text()[-3000:]
            return [tuple(int(x) for x in f) for f in found[:n]]
        time.sleep(0.1)


def test_pages_offloaded_on_every_rank_come_back_and_give_the_one_host_tokens(tmp_path):
    meet = tmp_path / "rendezvous"
    meet.mkdir()
    config = tmp_path / "serve.yaml"
    config.write_text("kv_budget: 7M\nkv_offload_bytes: 64M\n")
    log = tmp_path / "worker.log"
    ids = [int(i) for i in prompt_ids(2 * SEGMENT)]
    first, third = ids[:SEGMENT + HALF], ids
    evicting = [ids[1]] + ids[1:]  # differs at token 0: shares no page with the others
    want = one_host_run([str(i) for i in third], N_NEW)
    worker = subprocess.Popen([binary(), "serve", "-m", SMOL, "--threads", "1", "--config", str(config)]
                              + shard_args(meet, 1), stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    server = StrideServer(extra_args=shard_args(meet, 0) + ["--shard-min-tokens", str(SEGMENT),
                                                            "--shard-tokens", str(SEGMENT)],
                          config=str(config), threads=1)
    try:
        deadline = time.monotonic() + 120
        while server.metrics().get("stride_shard_set_connected") != 1:
            assert time.monotonic() < deadline, server.logs()[-3000:]
            time.sleep(0.2)
        assert complete(server, first).usage.prompt_tokens_details.cached_tokens == 0
        assert complete(server, evicting).usage.prompt_tokens_details.cached_tokens == 0
        m = server.metrics()
        assert m["stride_kv_offload_pages_offloaded_total"] > 0, "request 2 evicted nothing into rank 0's tier"
        restored_before = m["stride_kv_offload_pages_restored_total"]

        r3 = complete(server, third)
        assert r3.choices[0].text == want["text"]
        assert r3.choices[0].logprobs.token_logprobs == want["logprobs"]
        assert r3.usage.prompt_tokens_details.cached_tokens == SEGMENT + HALF
        m = server.metrics()
        assert m["stride_kv_offload_pages_restored_total"] > restored_before, "rank 0 restored nothing"
        assert m["stride_kv_cache_pages_used"] == 0
        # The worker reused its 128 positions in request 3 (4 pages on each of 30 layers), the ones request 2
        # evicted (it needed 270 of the pool's 298 pages) restored from its own tier; it holds no page after
        # any request.
        logged = worker_reused(log, 3)
        assert logged[:2] == [(0, 0, 0), (0, 0, 0)]
        assert logged[2][:2] == (HALF, 0) and 0 < logged[2][2] <= 4 * 30, logged
    finally:
        stop_set(server, [worker])
