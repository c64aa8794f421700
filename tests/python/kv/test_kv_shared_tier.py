"""The shared prefix-KV tier (kv_shared_tier: Redis). Replica A computes a
prompt and publishes its full pages; replica B, with an empty cache, takes
them from Redis and must produce exactly the tokens, log-probs and top-5
log-probs of a server without the tier. Damaged values are detected and
recomputed, a dead or hanging Redis never fails a request, the gauge follows
Redis, and a replica with another secret shares nothing."""
import json
import struct
import threading
import time

from redis_proc import RedisProc, SilentServer
from stride_server import SMOL, StrideServer

SECRET = "test-cluster-secret-0123456789"
PREFIX = "stride:kv:"
PAGE = 32
MAX_TOKENS = 8


def ids(n, seed):
    x = seed * 2654435761 + 12345
    out = []
    for _ in range(n):
        x = (x * 1664525 + 1013904223) % (1 << 32)
        out.append(3 + (x >> 8) % 40000)
    return out


def replica(url, secret=SECRET, extra_env=None):
    env = {"STRIDE_KV_SHARED_TIER_SECRET": secret}
    env.update(extra_env or {})
    return StrideServer(SMOL, extra_args=["--kv-shared-tier", url], env=env)


def complete(srv, prompt):
    t0 = time.time()
    status, _, body = srv.post("/v1/completions", {"model": srv.model_name, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0,
                                                    "logprobs": 5, "ignore_eos": True}, timeout=600)
    assert status == 200, body[:500]
    r = json.loads(body)
    lp = r["choices"][0]["logprobs"]
    cached = r["usage"]["prompt_tokens_details"]["cached_tokens"]
    return (lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]), cached, time.time() - t0


def wait_metric(srv, name, pred, timeout=30):
    t0 = time.time()
    while True:
        v = srv.metrics()[name]
        if pred(v):
            return v
        assert time.time() - t0 < timeout, f"{name} stayed {v}"
        time.sleep(0.1)


def reference(prompts):
    with StrideServer(SMOL) as plain:
        return [complete(plain, p)[0] for p in prompts]


def test_replica_b_reuses_a_pages_bit_identical():
    prompt = ids(300, 1)  # 9 whole pages before the last token
    pages = (len(prompt) - 1) // PAGE
    want = reference([prompt])[0]
    with RedisProc() as redis, replica(redis.url) as a:
        wait_metric(a, "stride_kv_shared_tier_up", lambda v: v == 1)
        got_a, cached_a, _ = complete(a, prompt)
        assert cached_a == 0
        assert got_a == want
        wait_metric(a, "stride_kv_shared_tier_published_total", lambda v: v == pages)
        keys = redis.keys(PREFIX + "*")
        assert len(keys) == pages
        ttl = redis.call("TTL", keys[0])
        assert 3000 < ttl <= 3600
        with replica(redis.url) as b:
            got_b, cached_b, _ = complete(b, prompt)
            m = b.metrics()
            assert cached_b == pages * PAGE
            assert m["stride_kv_shared_tier_hits_total"] == pages
            assert m["stride_kv_shared_tier_errors_total"] == 0
            assert m["stride_kv_shared_tier_bytes_in_total"] == a.metrics()["stride_kv_shared_tier_bytes_out_total"]
            # Bit for bit: tokens, their log-probs and the top-5 log-probs.
            assert got_b == want
            # B computed nothing it could take, so it published nothing.
            assert m["stride_kv_shared_tier_published_total"] == 0


def test_damaged_values_are_detected_and_recomputed():
    prompt = ids(300, 2)
    pages = (len(prompt) - 1) // PAGE
    want = reference([prompt])[0]
    with RedisProc() as redis:
        with replica(redis.url) as a:
            complete(a, prompt)
            wait_metric(a, "stride_kv_shared_tier_published_total", lambda v: v == pages)
        # Every value damaged: the first page's truncated, the others garbage.
        values = {k: redis.call("GET", k) for k in redis.keys(PREFIX + "*")}
        keys = chain_order(prompt, values)
        truncated = keys[0]
        redis.call("SET", truncated, values[truncated][: len(values[truncated]) // 2])
        for k in keys[1:]:
            redis.call("SET", k, b"garbage")
        with replica(redis.url) as b:
            got, cached, _ = complete(b, prompt)
            m = b.metrics()
            assert got == want
            assert cached == 0
            assert m["stride_kv_shared_tier_hits_total"] == 0
            assert m["stride_kv_shared_tier_errors_total"] == 1  # the first damaged value stops the lookup
            # The damaged value B read is deleted, then B publishes its own pages over all of them.
            wait_metric(b, "stride_kv_shared_tier_published_total", lambda v: v == pages)
            assert len(redis.call("GET", truncated)) == len(values[truncated])
        # A flipped bit deep in one page: the pages before it are still used.
        with replica(redis.url) as c:
            good = {k: redis.call("GET", k) for k in redis.keys(PREFIX + "*")}
            assert len(good) == pages and all(len(v) == len(values[keys[0]]) for v in good.values())
            order = chain_order(prompt, good)
            flipped = bytearray(good[order[4]])
            flipped[len(flipped) // 2] ^= 1
            redis.call("SET", order[4], bytes(flipped))
            got, cached, _ = complete(c, prompt)
            m = c.metrics()
            assert got == want
            assert cached == 4 * PAGE
            assert m["stride_kv_shared_tier_hits_total"] == 4
            assert m["stride_kv_shared_tier_errors_total"] == 1


def chain_order(prompt, values):
    """The keys in page order: a value's token ids (after its 88-byte header)
    are the prompt's page it holds."""
    order = []
    for i in range((len(prompt) - 1) // PAGE):
        page = prompt[i * PAGE:(i + 1) * PAGE]
        want = struct.pack("<%di" % PAGE, *page)
        order.append(next(k for k, v in values.items() if v[88:88 + 4 * PAGE] == want))
    return order


def test_redis_killed_and_restarted():
    with RedisProc() as redis, replica(redis.url) as a:
        wait_metric(a, "stride_kv_shared_tier_up", lambda v: v == 1)
        redis.stop()
        got, _, secs = complete(a, ids(200, 3))
        assert len(got[0]) == MAX_TOKENS
        wait_metric(a, "stride_kv_shared_tier_up", lambda v: v == 0)
        assert a.metrics()["stride_kv_shared_tier_errors_total"] >= 1
        # Still serving while Redis is down.
        got, _, _ = complete(a, ids(200, 4))
        assert len(got[0]) == MAX_TOKENS
        published = a.metrics()["stride_kv_shared_tier_published_total"]
        redis.start()
        wait_metric(a, "stride_kv_shared_tier_up", lambda v: v == 1)
        complete(a, ids(200, 5))
        wait_metric(a, "stride_kv_shared_tier_published_total", lambda v: v >= published + 6)
        assert len(redis.keys(PREFIX + "*")) >= 6
        logs = a.logs()
        assert logs.count("down, serving from the local cache") == 1
        assert "back up" in logs


def test_hanging_redis_costs_bounded_time():
    prompt = ids(200, 6)
    with StrideServer(SMOL) as plain:
        _, _, plain_secs = complete(plain, prompt)
    with SilentServer() as silent, replica(silent.url) as a:
        got, _, secs = complete(a, prompt)
        assert len(got[0]) == MAX_TOKENS
        assert secs < plain_secs + 2.0, (secs, plain_secs)
        wait_metric(a, "stride_kv_shared_tier_errors_total", lambda v: v >= 1)
        assert a.metrics()["stride_kv_shared_tier_up"] == 0
        got, _, secs = complete(a, ids(200, 7))
        assert secs < plain_secs + 2.0, (secs, plain_secs)


def test_redis_stalled_mid_run_costs_bounded_time():
    """DEBUG SLEEP stalls Redis while a prompt is admitted: the lookup gives
    up after its 50 ms timeout, the request is computed, and the tier comes
    back once Redis answers again."""
    prompt = ids(200, 9)
    with StrideServer(SMOL) as plain:
        _, _, plain_secs = complete(plain, prompt)
    with RedisProc() as redis, replica(redis.url) as a:
        wait_metric(a, "stride_kv_shared_tier_up", lambda v: v == 1)
        sleeper = threading.Thread(target=redis.call, args=("DEBUG", "SLEEP", "4"), kwargs={"timeout": 30})
        sleeper.start()
        time.sleep(0.2)
        got, cached, secs = complete(a, prompt)
        assert len(got[0]) == MAX_TOKENS and cached == 0
        assert secs < plain_secs + 2.0, (secs, plain_secs)
        assert a.metrics()["stride_kv_shared_tier_errors_total"] >= 1
        sleeper.join()
        wait_metric(a, "stride_kv_shared_tier_up", lambda v: v == 1, timeout=30)
        complete(a, ids(200, 10))
        wait_metric(a, "stride_kv_shared_tier_published_total", lambda v: v >= 6)


def test_another_secret_shares_nothing():
    prompt = ids(300, 8)
    pages = (len(prompt) - 1) // PAGE
    with RedisProc() as redis:
        with replica(redis.url) as a:
            complete(a, prompt)
            wait_metric(a, "stride_kv_shared_tier_published_total", lambda v: v == pages)
        with replica(redis.url, secret="another-secret-9876543210") as b:
            _, cached, _ = complete(b, prompt)
            m = b.metrics()
            assert cached == 0
            assert m["stride_kv_shared_tier_hits_total"] == 0
            assert m["stride_kv_shared_tier_misses_total"] == pages
            wait_metric(b, "stride_kv_shared_tier_published_total", lambda v: v == pages)
        assert len(redis.keys(PREFIX + "*")) == 2 * pages
