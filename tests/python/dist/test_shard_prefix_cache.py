"""The prefix cache per rank of `stride serve`'s shard set: rank 0 the HTTP server, ranks above 0
workers, on loopback, each with its own KV pool and prefix cache. With --shard-tokens 256 every
rank but the last holds 256 positions whatever the prompt's length, so a longer prompt with the
same prefix finds each rank's pages where the first request left them.

Request 1 is (W - 1) x 256 + 128 tokens; request 2 that prompt and 128 more. Each rank looks
up its own run, keyed from position 0; the ranks agree on the first position any must compute
(here 896 of 1024 for W = 4), the ranks before it compute nothing but relay their cached pages
around the ring, and the last rank prefills the 128 new tokens. Request 2's text and token
log-probabilities must be the one host's (`stride run`), bit for bit, as the existing sharded
tests hold them (every rank's shard one of the kernel's 256-key segments); usage reports the
cached prompt tokens (OpenAI's prompt_tokens_details.cached_tokens) and each rank logs its
reused tokens. A prompt that differs at token 0 reuses nothing and is still the one host's;
no rank holds a KV page after a request."""
import re
import subprocess
import time

import openai
import pytest

from shard_ranks import SEGMENT, one_host_run, prompt_ids, stop_set
from stride_server import SMOL, StrideServer, binary

N_NEW = 8
TIMEOUT_MS = 30000
HALF = SEGMENT // 2


def shard_args(meet, world, rank):
    return ["--shard-world", str(world), "--rendezvous", f"file:{meet}", "--shard-prefix", "prefix-test",
            "--shard-timeout-ms", str(TIMEOUT_MS), "--shard-rank", str(rank)]


def wait_connected(server, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.metrics().get("stride_shard_set_connected") == 1:
            return
        time.sleep(0.2)
    pytest.fail(f"the shard set did not connect:\n{server.logs()[-3000:]}")


def start_set(tmp_path, world, kv, policy, layout=("--shard-tokens", str(SEGMENT))):
    meet = tmp_path / "rendezvous"
    meet.mkdir()
    config = tmp_path / "serve.yaml"
    config.write_text(f"kv_type: {kv}\nattention: \"{policy}\"\n")
    logs = [tmp_path / f"worker{r}.log" for r in range(1, world)]
    workers = [subprocess.Popen([binary(), "serve", "-m", SMOL, "--threads", "1", "--config", str(config)]
                                + shard_args(meet, world, r), stdout=open(logs[r - 1], "ab"),
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL) for r in range(1, world)]
    # Prompts of a segment or more go to the set; the layout is rank 0's, sent with each job.
    server = StrideServer(extra_args=shard_args(meet, world, 0) + ["--shard-min-tokens", str(SEGMENT), *layout],
                          config=str(config), threads=1)
    wait_connected(server)
    return server, workers, logs


def complete(server, ids):
    c = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
    return c.completions.create(model=server.model_name, prompt=ids, max_tokens=N_NEW, temperature=0, logprobs=0,
                                extra_body={"ignore_eos": True})


def reused_by_rank(server, logs, n_requests, timeout=30):
    """[request][rank] the prompt tokens each rank logged as reused, once every rank logged n_requests."""
    deadline = time.monotonic() + timeout
    pattern = re.compile(r"shard rank \d+(?:/\d+)?: request \S+: done, \d+ tokens, (\d+) prompt tokens reused")
    while True:
        texts = [server.logs()] + [log.read_text() for log in logs]
        found = [[int(k) for k in pattern.findall(t)] for t in texts]
        if all(len(f) >= n_requests for f in found) or time.monotonic() > deadline:
            assert all(len(f) >= n_requests for f in found), texts
            return [[f[i] for f in found] for i in range(n_requests)]
        time.sleep(0.1)


def pages_held(logs):
    return [int(k) for log in logs for k in re.findall(r"(\d+) KV pages held", log.read_text())]


@pytest.mark.parametrize("world,kv,policy", [(2, "f16", "dense"), (4, "f16", "dense"), (2, "int8", "dense"),
                                             (4, "int8", "dense"), (4, "f16", "rswa:sinks=4,window=64")],
                         ids=["2-ranks", "4-ranks", "2-ranks-int8", "4-ranks-int8", "4-ranks-rswa"])
def test_a_longer_prompt_reuses_every_ranks_cached_pages_and_gives_the_one_host_tokens(world, kv, policy, tmp_path):
    """R-SWA: a rank keeps (and reuses) only the sinks and its window's pages, and a rank wholly
    reused still relays the sinks to the last rank."""
    n1 = (world - 1) * SEGMENT + HALF
    ids = [int(i) for i in prompt_ids(world * SEGMENT)]
    first, second = ids[:n1], ids
    other = [ids[1]] + ids[1:]  # differs at token 0 only
    want = one_host_run([str(i) for i in second], N_NEW, policy=policy, kv=kv)
    want_other = one_host_run([str(i) for i in other], N_NEW, policy=policy, kv=kv)
    server, workers, logs = start_set(tmp_path, world, kv, policy)
    try:
        r1 = complete(server, first)
        assert r1.usage.prompt_tokens == n1 and r1.usage.completion_tokens == N_NEW
        assert r1.usage.prompt_tokens_details.cached_tokens == 0

        r2 = complete(server, second)
        assert r2.choices[0].text == want["text"]
        assert r2.choices[0].logprobs.token_logprobs == want["logprobs"]  # exact: both round-trip a float
        # Every rank but the last reused its whole shard; the last its first half segment (the pages
        # request 1 filled); the set the first n1 positions.
        assert r2.usage.prompt_tokens_details.cached_tokens == n1

        r3 = complete(server, other)
        assert r3.choices[0].text == want_other["text"]
        assert r3.choices[0].logprobs.token_logprobs == want_other["logprobs"]
        assert r3.usage.prompt_tokens_details.cached_tokens == 0

        reused = reused_by_rank(server, logs, 3)
        assert reused[0] == [0] * world
        assert reused[1] == [SEGMENT] * (world - 1) + [HALF]
        assert reused[2] == [0] * world
        assert pages_held(logs) == [0] * (3 * (world - 1))  # the workers' pages back after every request
        assert server.metrics()["stride_kv_cache_pages_used"] == 0
    finally:
        stop_set(server, workers)


def test_without_shard_tokens_the_automatic_layout_reuses_the_prefix(tmp_path):
    """No --shard-tokens: rank 0's context (-c 520) over 2 ranks gives S = 256 (260 rounded down to a
    kernel segment), so a 384-token prompt is cut [0, 256) + [256, 384) (an equal cut would be 192 + 192,
    and the 512-token one after it 256 + 256, every boundary moved) and the 512-token prompt that
    extends it reuses all 384 positions, with the one host's text and log-probabilities."""
    ids = [int(i) for i in prompt_ids(2 * SEGMENT)]
    first, second = ids[:SEGMENT + HALF], ids
    want = one_host_run([str(i) for i in second], N_NEW)
    server, workers, logs = start_set(tmp_path, 2, "f16", "dense", layout=("-c", str(2 * SEGMENT + N_NEW)))
    try:
        assert complete(server, first).usage.prompt_tokens_details.cached_tokens == 0
        r2 = complete(server, second)
        assert r2.choices[0].text == want["text"]
        assert r2.choices[0].logprobs.token_logprobs == want["logprobs"]
        assert r2.usage.prompt_tokens_details.cached_tokens == SEGMENT + HALF
        assert reused_by_rank(server, logs, 2) == [[0, 0], [SEGMENT, HALF]]
        assert pages_held(logs) == [0, 0]
        assert server.metrics()["stride_kv_cache_pages_used"] == 0
    finally:
        stop_set(server, workers)
