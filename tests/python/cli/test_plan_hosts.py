"""`stride plan --hosts N` and `--host-memory BYTES`: each rank's memory when
one sequence is spread by position over a shard set, against the KV byte
formula computed here from the model's shape (`stride info`): a rank holds
its shard on every layer (the largest: the last rank's under the automatic layout), K and V
of every kv head at 2 bytes (f16) or 1 byte and a 4-byte scale per token and
head (int8); and the fewest hosts whose memory holds a rank's total."""
import json
import subprocess

import pytest

from shard_ranks import model_info
from stride_server import SMOL, binary

PAGE = 32
SEGMENT = 256  # the attention kernel's segment: 8 pages


def plan(*args):
    r = subprocess.run([binary(), "plan", "-m", SMOL, "--json", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def largest_shard(context, hosts):
    """The automatic layout (docs/deploy.md): ranks 0 .. N-2 hold S = floor(context / N) rounded down
    to 256-token segments, the last rank the rest; balanced (ceil(context / N) in pages) when S is 0."""
    s = context // hosts // SEGMENT * SEGMENT
    if hosts == 1 or s == 0:
        return min(context, -(-(-(-context // hosts)) // PAGE) * PAGE)
    return context - (hosts - 1) * s


def kv_bytes_per_rank(info, context, hosts, bytes_per_value, scale_bytes=0):
    pages = -(-largest_shard(context, hosts) // PAGE)
    per_token = info["n_head_kv"] * ((info["head_dim"] + info["head_dim_v"]) * bytes_per_value + scale_bytes)
    return info["n_layer"] * pages * PAGE * per_token


@pytest.fixture(scope="module")
def info():
    return model_info()


@pytest.mark.parametrize("kv,bytes_per_value,scale_bytes", [("f16", 2, 0), ("int8", 1, 8)])
@pytest.mark.parametrize("hosts", [1, 2, 4, 7])
def test_kv_per_rank_is_the_shard_of_the_context(hosts, kv, bytes_per_value, scale_bytes, info):
    context = 1 << 20
    j = plan("--context", str(context), "--hosts", str(hosts), "--kv-type", kv)
    s = j["shard"]
    assert s["hosts"] == hosts
    assert s["tokens_per_rank"] == largest_shard(context, hosts)
    assert s["shard_tokens"] == (0 if hosts == 1 else context // hosts // SEGMENT * SEGMENT)
    assert s["kv_bytes_per_rank"] == kv_bytes_per_rank(info, context, hosts, bytes_per_value, scale_bytes)
    assert s["weight_bytes"] == j["weight_bytes"]
    parts = s["weight_bytes"] + s["kv_bytes_per_rank"] + s["activation_bytes_per_rank"] + s["ring_bytes_per_rank"]
    assert s["total_bytes_per_rank"] == parts
    assert (s["ring_bytes_per_rank"] == 0) == (hosts == 1)


def test_host_memory_gives_the_fewest_hosts_that_hold_the_context(info):
    context = 1 << 20
    one = plan("--context", str(context), "--hosts", "1")["shard"]
    for memory in [one["total_bytes_per_rank"] // d for d in (2, 3, 5, 8)]:
        s = plan("--context", str(context), "--host-memory", str(memory))["shard"]
        assert s["total_bytes_per_rank"] <= memory
        assert s["kv_bytes_per_rank"] == kv_bytes_per_rank(info, context, s["hosts"], 2)
        if s["hosts"] > 1:  # one host fewer does not fit
            fewer = plan("--context", str(context), "--hosts", str(s["hosts"] - 1))["shard"]
            assert fewer["total_bytes_per_rank"] > memory


def test_a_host_smaller_than_the_weights_is_refused():
    r = subprocess.run([binary(), "plan", "-m", SMOL, "--context", "4096", "--host-memory", "1M"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "no shard set" in r.stderr, r.stderr
