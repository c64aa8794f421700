"""`stride plan --hosts N` and `--host-memory BYTES`: each rank's memory when
one sequence is spread by position over a shard set, against the KV byte
formula computed here from the model's shape (`stride info`): a rank holds
its shard on every layer (the largest: the last rank's under the automatic layout), K and V
of every kv head at 2 bytes (f16) or 1 byte and a 4-byte scale per token and
head (int8); and the fewest hosts whose memory holds a rank's total. The
balanced cut plan prints is checked against trying every segment-aligned cut
under the prefill cost docs/deploy.md states, and the projections of the two
cuts of a whole-context prompt against that cost and a decode step's, its
keys counted per rank by the policy here."""
import itertools
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
    to 256-token segments, the last rank the rest (the tests here keep S above 0)."""
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


def dense_prefill_cost(info, begin, end):
    """docs/deploy.md's balanced cut: a token's matmul multiply-adds over every layer, counted in key
    reads of n_head * (dk + dv) multiply-adds weighed 5 each, plus one per key a query reads per layer."""
    c = info
    q, k = c["n_head"] * c["head_dim"], c["n_head_kv"] * c["head_dim"]
    v, o = c["n_head_kv"] * c["head_dim_v"], c["n_head"] * c["head_dim_v"]
    per_layer = c["n_embd"] * (q + k + v) + o * c["n_embd"] + 3 * c["n_embd"] * c["n_ff"]
    token_cost = per_layer * c["n_layer"] // (c["n_head"] * (c["head_dim"] + c["head_dim_v"]) * 5)
    keys = end * (end + 1) // 2 - begin * (begin + 1) // 2  # query p reads p + 1 keys under dense
    return token_cost * (end - begin) + c["n_layer"] * keys


@pytest.mark.parametrize("context,hosts", [(4096, 2), (6144, 3), (8192, 4)])
def test_the_balanced_cut_is_the_cheapest_on_segments(context, hosts, info):
    s = plan("--context", str(context), "--hosts", str(hosts))["shard"]
    n, cut, most = s["balanced_tokens"], s["balanced_boundaries"], s["shard_tokens"]
    assert n == (hosts - 1) * most and cut[0] == 0 and cut[-1] == n and len(cut) == hosts + 1
    assert all(b % SEGMENT == 0 for b in cut[1:-1]) and all(cut[r + 1] - cut[r] <= most for r in range(hosts))

    def costliest(b):
        return max(dense_prefill_cost(info, b[r], b[r + 1]) for r in range(hosts))

    best = min(costliest((0, *inner, n)) for inner in itertools.combinations(range(SEGMENT, n, SEGMENT), hosts - 1)
               if all(y - x <= most for x, y in zip((0, *inner), (*inner, n))))
    assert costliest(cut) == best
    assert cut[1] - cut[0] > cut[-1] - cut[-2]  # dense: the first rank's queries read fewer keys, so it takes more


def dense_decode_cost(info, begin, end, n, keeps_tokens):
    """docs/deploy.md's decode cost of a step at position n to the rank holding [begin, end): under dense
    the query reads every key it holds on every layer; the rank keeping the tokens also runs the matmuls,
    counted in key reads of n_head * (dk + dv) multiply-adds weighed 3 each."""
    c = info
    q, k = c["n_head"] * c["head_dim"], c["n_head_kv"] * c["head_dim"]
    v, o = c["n_head_kv"] * c["head_dim_v"], c["n_head"] * c["head_dim_v"]
    per_layer = c["n_embd"] * (q + k + v) + o * c["n_embd"] + 3 * c["n_embd"] * c["n_ff"]
    token_cost = per_layer * c["n_layer"] // (c["n_head"] * (c["head_dim"] + c["head_dim_v"]) * 3)
    keys = sum(1 for key in range(begin, end) if key < n)
    return (token_cost if keeps_tokens else 0) + c["n_layer"] * keys


@pytest.mark.parametrize("context,hosts", [(8192, 2), (16384, 4)])
def test_the_two_cuts_trade_prefill_for_decode_under_dense(context, hosts, info):
    s = plan("--context", str(context), "--hosts", str(hosts))["shard"]
    layout, balanced = s["layout_cut"], s["prefill_cut"]
    step = context // hosts // SEGMENT * SEGMENT
    assert layout["boundaries"] == [r * step for r in range(hosts)] + [context]  # the layout's equal runs
    assert balanced["boundaries"][-1] == context and all(b % SEGMENT == 0 for b in balanced["boundaries"])
    for cut in (layout, balanced):
        b = cut["boundaries"]
        prefill = max(dense_prefill_cost(info, b[r], b[r + 1]) for r in range(hosts))
        decode = max(dense_decode_cost(info, b[r], b[r + 1], context, r == hosts - 1) for r in range(hosts))
        assert cut["prefill_speedup"] == pytest.approx(dense_prefill_cost(info, 0, context) / prefill)
        assert cut["decode_speedup"] == pytest.approx(dense_decode_cost(info, 0, context, context, True) / decode)
    assert balanced["prefill_speedup"] > layout["prefill_speedup"]
    assert layout["decode_speedup"] > balanced["decode_speedup"]
