"""`stride serve` with a shard set: rank 0 is the HTTP server, rank 1 a worker
without HTTP, meeting through a `file:` rendezvous on loopback. Rank 0's KV
pool is too small for the long prompt, so it goes to the set (the default
without --shard-min-tokens); short prompts run on rank 0 alone.

Against the one-host engine (`stride run`, greedy) through the official
`openai` client: a 2 x 256-token prompt (shards on the kernel's segments)
gives the one host's text and token log-probabilities, bit for bit, plain and
streamed. Failure: the worker killed mid-stream ends that stream with an error
event, rank 0 keeps serving short prompts and holds no pages for the failed
request, and a restarted worker joins the set's next generation, after which
sharded prompts are served again, rank 0 never restarted."""
import re
import signal
import subprocess
import threading
import time

import openai
import pytest

from shard_ranks import SEGMENT, one_host_run, prompt_ids, stop_set
from stride_server import SMOL, StrideServer, binary

N_NEW = 8
TIMEOUT_MS = 10000  # every exchange's deadline: long enough for a loaded 2-core machine, short for the stall test
RANK0_KV = "7M"  # 298 pages of SmolLM2 (30 layers, 32-token f16 pages): 9 pages of positions on every layer
SHARD_ARGS = ["--shard-world", "2", "--rendezvous", "{meet}", "--shard-prefix", "serve-test",
              "--shard-timeout-ms", str(TIMEOUT_MS)]


def shard_args(meet, rank):
    return [a.format(meet=f"file:{meet}") for a in SHARD_ARGS] + ["--shard-rank", str(rank)]


def start_worker(meet, log_path):
    log = open(log_path, "ab")
    return subprocess.Popen([binary(), "serve", "-m", SMOL, "--threads", "1"] + shard_args(meet, 1),
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def wait_connected(server, generation_at_least=0, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = server.metrics()
        if m.get("stride_shard_set_connected") == 1 and m.get("stride_shard_set_generation", -1) >= generation_at_least:
            return m
        time.sleep(0.2)
    pytest.fail(f"the shard set did not connect:\n{server.logs()[-3000:]}")


@pytest.fixture
def shard_set(tmp_path):
    meet = tmp_path / "rendezvous"
    meet.mkdir()
    worker_log = tmp_path / "worker.log"
    workers = [start_worker(meet, worker_log)]
    # Rank 0's pool holds its 256-token shard and short prompts, not the whole 512-token prompt: without
    # --shard-min-tokens, that is what sends a prompt to the set. The worker (the decode's root) keeps the default.
    server = StrideServer(extra_args=shard_args(meet, 0) + ["--kv-budget", RANK0_KV], threads=1)
    try:
        wait_connected(server)
        yield server, meet, worker_log, workers
    finally:
        stop_set(server, workers)


@pytest.fixture(scope="module")
def long_prompt():
    ids = [int(i) for i in prompt_ids(2 * SEGMENT)]
    want = one_host_run([str(i) for i in ids], N_NEW)
    return ids, want


def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)


def complete(server, prompt, max_tokens=N_NEW, **kw):
    return client(server).completions.create(model=server.model_name, prompt=prompt, max_tokens=max_tokens,
                                             temperature=0, logprobs=0, extra_body={"ignore_eos": True}, **kw)


def worker_tokens(worker_log, n, timeout=10):
    """The tokens of each request the worker logged, once it has logged n (it logs after rank 0 answered)."""
    deadline = time.monotonic() + timeout
    while True:
        tokens = [int(k) for k in re.findall(r": done, (\d+) tokens", worker_log.read_text())]
        if len(tokens) >= n or time.monotonic() > deadline:
            return tokens
        time.sleep(0.1)


def stream_completion(server, prompt, max_tokens):
    return client(server).completions.create(model=server.model_name, prompt=prompt, max_tokens=max_tokens,
                                             temperature=0, stream=True, extra_body={"ignore_eos": True})


def test_a_long_prompt_served_across_two_ranks_gives_the_one_host_tokens(shard_set, long_prompt):
    server, _, worker_log, _ = shard_set
    ids, want = long_prompt
    idle_pages = server.metrics()["stride_kv_cache_pages_used"]
    r = complete(server, ids)
    assert r.choices[0].text == want["text"]
    assert r.choices[0].logprobs.token_logprobs == want["logprobs"]  # exact: both round-trip a float
    assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == N_NEW

    # Streamed, with a short prompt served on rank 0 while the sharded stream runs.
    short_done = {}

    def short():
        short_done["text"] = complete(server, "The capital of France is", max_tokens=4).choices[0].text
        short_done["at"] = time.monotonic()

    pieces, finish, t = [], None, None
    stream = stream_completion(server, ids, max_tokens=24)
    for chunk in stream:
        pieces.append(chunk.choices[0].text)
        finish = chunk.choices[0].finish_reason or finish
        if t is None:
            t = threading.Thread(target=short)
            t.start()
    stream_end = time.monotonic()
    t.join(120)
    assert "".join(pieces).startswith(want["text"])
    assert finish == "length"
    assert short_done["text"]
    assert short_done["at"] < stream_end, "the short prompt waited for the sharded one"

    m = server.metrics()
    assert m["stride_sharded_requests_total"] == 2  # the short prompt ran on rank 0 alone
    assert m["stride_sharded_request_failures_total"] == 0

    # What the set cannot do is refused as the client's error, not run on one host.
    with pytest.raises(openai.BadRequestError) as refused:
        complete(server, ids, n=2)
    assert "sharded" in refused.value.message
    assert m["stride_kv_cache_pages_used"] == idle_pages

    # A client gone mid-stream stops every rank (rank 0 tells the set before each token): the next
    # sharded request does not wait for the 1000 tokens asked.
    stream = stream_completion(server, ids, max_tokens=1000)
    for i, _ in enumerate(stream):
        if i == 2:
            break
    stream.close()
    assert complete(server, ids).choices[0].text == want["text"]
    tokens = worker_tokens(worker_log, 4)
    assert len(tokens) == 4 and tokens[:2] == [N_NEW, 24] and 3 <= tokens[2] < 1000 and tokens[3] == N_NEW, tokens
    assert server.metrics()["stride_kv_cache_pages_used"] == idle_pages
    assert server.metrics()['stride_request_success_total{finished_reason="cancelled"}'] == 1


def test_a_worker_killed_mid_generation_fails_its_request_and_a_restarted_one_rejoins(shard_set, long_prompt):
    server, meet, worker_log, workers = shard_set
    ids, want = long_prompt
    idle_pages = server.metrics()["stride_kv_cache_pages_used"]
    stream = stream_completion(server, ids, max_tokens=1000)
    with pytest.raises(openai.APIError) as failed:
        for i, _ in enumerate(stream):
            if i == 2:
                workers[0].send_signal(signal.SIGKILL)
    assert "a peer is gone" in str(failed.value)

    # Rank 0 keeps serving short prompts, and holds no pages of the failed request.
    assert complete(server, "The capital of France is", max_tokens=4).choices[0].text
    m = server.metrics()
    assert m["stride_kv_cache_pages_used"] == idle_pages
    assert m["stride_sharded_request_failures_total"] == 1
    # A long prompt while the set is down is refused (503).
    with pytest.raises(openai.APIStatusError) as refused:
        complete(server, ids)
    assert refused.value.status_code == 503

    # The worker restarted with the same command joins the set's next generation.
    workers.append(start_worker(meet, worker_log))
    wait_connected(server, generation_at_least=1)
    r = complete(server, ids)
    assert r.choices[0].text == want["text"]
    assert r.choices[0].logprobs.token_logprobs == want["logprobs"]
    assert server.metrics()["stride_kv_cache_pages_used"] == idle_pages
    assert server.proc.poll() is None


def test_a_stalled_worker_times_out_its_request_and_rejoins_once_it_resumes(shard_set, long_prompt):
    """SIGSTOP: rank 0 gives up at the deadline; the resumed worker finds its group gone and joins the next one."""
    server, _, _, workers = shard_set
    ids, want = long_prompt
    idle_pages = server.metrics()["stride_kv_cache_pages_used"]
    stream = stream_completion(server, ids, max_tokens=1000)
    t0 = None
    with pytest.raises(openai.APIError) as failed:
        for i, _ in enumerate(stream):
            if i == 2:
                workers[0].send_signal(signal.SIGSTOP)
                t0 = time.monotonic()
    waited = time.monotonic() - t0
    workers[0].send_signal(signal.SIGCONT)
    assert "timed out" in str(failed.value)
    assert TIMEOUT_MS / 1000 - 1 < waited < TIMEOUT_MS / 1000 + 10
    assert server.metrics()["stride_kv_cache_pages_used"] == idle_pages

    wait_connected(server, generation_at_least=1)
    r = complete(server, ids)
    assert r.choices[0].text == want["text"]
    assert server.metrics()["stride_sharded_request_failures_total"] == 1
