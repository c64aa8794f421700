"""`stride run` across a shard set against the one-host `stride run`: the
prompt spread by position over 2 and 4 rank processes on loopback (ring
prefill), then decoded with the new tokens' keys on the last rank and every
layer's new query attended on every rank, the partial softmax states merged
on the last rank. Under R-SWA only the pages a rank's queries see travel to
it, and decode asks only the ranks holding a visible key; top-k (selecting on
decode steps, prefill=dense) agrees on the one host's pages; int8 KV travels
as stored.

With every rank after the first holding exactly one of the kernel's 256-key
segments, the merge folds what the one-host kernel folds in its order, so
the greedy tokens and their log-probabilities must be the one host's, bit
for bit. The payload each rank sends is checked against the byte formula of
the exchange, computed here from the model's shape.

Failure: a rank killed mid-decode makes the other exit at once with "a peer
is gone", holding no KV pages afterwards."""
import json
import os
import signal
import time

import pytest

from shard_ranks import (N_NEW, PAGE, SEGMENT, finish, model_info, one_host_run, page_image_bytes, prompt_ids,
                         ring_bytes_per_layer, sees, start_ranks)
from stride_server import SMOL

def start_run_ranks(ids, world, tmp_path, n_new, timeout_ms=60000, policy="dense", kv="f16", extra=()):
    return start_ranks(lambda rank: ["run", "-m", SMOL, "--prompt-ids", " ".join(ids), "-n", str(n_new), "-a", policy,
                                     "--kv-type", kv, "--temperature", "0", "--ignore-eos", "--threads", "1", "--json",
                                     *extra],
                       world, tmp_path / "rendezvous", timeout_ms)


@pytest.fixture(scope="module")
def smol_info():
    return model_info()


def expected_payload(policy, world, rank, info, n_prompt):
    """Bytes rank `rank` sends (the exchange's byte formula, from the model's shape)."""
    layers, heads, kv_heads = info["n_layer"], info["n_head"], info["n_head_kv"]
    # 56 bytes agreeing on the prompt, the shard layout (S and the cut) and the reused positions; 8 per rank agreeing
    # that every rank took its part (its status); then the ring prefill of every layer.
    shards = [(r * SEGMENT, (r + 1) * SEGMENT) for r in range(world)]
    total = 56 + 8 * world + layers * ring_bytes_per_layer(policy, shards, rank, info)
    # Per decode step (N_NEW - 1: the last token is not run) and layer, the root sends its query
    # (H * dk floats) to every rank holding a key the query sees; each such rank sends back a
    # partial state (H * (dv + 2) floats). Top-k adds each rank's page scores (kv heads x pages
    # of the sequence so far) to an allreduce. The root tells W - 1 ranks each sampled token.
    root = world - 1
    for step in range(N_NEW - 1):
        q_pos = n_prompt + step
        asked = [r == root or sees(policy, q_pos, q_pos, shards[r][0], shards[r][1] - 1) for r in range(world)]
        if rank == root:
            total += layers * sum(asked[r] for r in range(world) if r != root) * heads * info["head_dim"] * 4
        elif asked[rank]:
            total += layers * heads * (info["head_dim_v"] + 2) * 4
        if policy.startswith("topk"):
            total += layers * kv_heads * (-(-(q_pos + 1) // PAGE)) * 4
    if rank == root:
        total += N_NEW * (world - 1) * 8
    return total


@pytest.mark.parametrize("world,policy,kv", [(2, "dense", "f16"), (4, "dense", "f16"), (4, "rswa:sinks=4,window=64", "f16"),
                                             (2, "topk:sparsity=0.9,prefill=dense", "f16"),
                                             (4, "topk:sparsity=0.9,prefill=dense", "f16"),
                                             (4, "topk:mass=0.7,prefill=dense", "f16"),
                                             (2, "dense", "int8"), (4, "rswa:sinks=4,window=64", "int8")],
                         ids=["2x256-dense", "4x256-dense", "4x256-rswa", "2x256-topk", "4x256-topk", "4x256-topk-mass",
                              "2x256-dense-int8", "4x256-rswa-int8"])
def test_sharded_decode_gives_the_one_host_tokens_and_logprobs(world, policy, kv, tmp_path, smol_info):
    """R-SWA: the ranks before the window hold only what its sinks and window keep (the rest released),
    receive in the ring only the pages their queries see, and are not asked in decode.
    Top-k (prefill=dense, selecting on decode steps): every rank scores its own pages and they agree
    on the pages one host picks. int8: the stored pages with their scales travel as they are."""
    ids = prompt_ids(world * SEGMENT)
    want = one_host_run(ids, N_NEW, policy, kv)
    results = finish(start_run_ranks(ids, world, tmp_path, N_NEW, policy=policy, kv=kv))
    for rank, (rc, _, err) in enumerate(results):
        assert rc == 0, f"rank {rank} exit {rc}: {err[-2000:]}"
    metas = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results]
    assert len(want["generated_ids"]) == N_NEW
    for m in metas:
        assert m["generated_ids"] == want["generated_ids"], m["shard_rank"]
        assert m["logprobs"] == want["logprobs"], m["shard_rank"]  # exact: JSON round-trips a float
        assert m["text"] == want["text"]
        assert m["kv_pages_held"] == 0
    assert [(m["pos_begin"], m["pos_end"]) for m in metas] == [(r * SEGMENT, (r + 1) * SEGMENT) for r in range(world)]
    if kv != "f16":
        return  # the byte formulas below count f16 pages
    for m in metas:
        assert m["payload_bytes_sent"] == expected_payload(policy, world, m["shard_rank"], smol_info, len(ids)), m
    # A rank's pool held its shard; the last rank also the generated tokens' pages (dense keeps them all).
    kv_page = page_image_bytes(smol_info) - PAGE * 4
    for m in metas if policy == "dense" else []:
        pages = SEGMENT // PAGE + (-(-N_NEW // PAGE) if m["shard_rank"] == world - 1 else 0)
        assert m["peak_kv_bytes"] == smol_info["n_layer"] * pages * kv_page, m


@pytest.mark.parametrize("world,policy,kv,chunk", [(2, "dense", "f16", 64), (4, "rswa:sinks=4,window=64", "int8", 80),
                                                   (4, "topk:sparsity=0.9,prefill=dense", "f16", 100),
                                                   (2, "dense", "int8", 32), (4, "rswa:sinks=4,window=64", "f16", 48)],
                         ids=["2x256-dense-chunk64", "4x256-rswa-int8-chunk80", "4x256-topk-chunk100",
                              "2x256-dense-int8-chunk32", "4x256-rswa-chunk48"])
def test_a_shard_prefilled_in_chunks_gives_the_one_host_tokens_and_logprobs(world, policy, kv, chunk, tmp_path,
                                                                            smol_info):
    """Each rank runs its 256 positions layer by layer in chunks of --shard-chunk tokens (several per
    rank; 64 and 32 end on 32-token pages, 80, 100 and 48 do not): the earlier ranks' pages still come
    once per layer, so the tokens, their log-probabilities and the bytes each rank sends are those of
    the one host and of the exchange's formula."""
    ids = prompt_ids(world * SEGMENT)
    want = one_host_run(ids, N_NEW, policy, kv)
    results = finish(start_run_ranks(ids, world, tmp_path, N_NEW, policy=policy, kv=kv,
                                     extra=("--shard-chunk", str(chunk))))
    for rank, (rc, _, err) in enumerate(results):
        assert rc == 0, f"rank {rank} exit {rc}: {err[-2000:]}"
    metas = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results]
    for m in metas:
        assert m["generated_ids"] == want["generated_ids"], m["shard_rank"]
        assert m["logprobs"] == want["logprobs"], m["shard_rank"]
        assert m["kv_pages_held"] == 0
    for m in metas if kv == "f16" else []:
        assert m["payload_bytes_sent"] == expected_payload(policy, world, m["shard_rank"], smol_info, len(ids)), m


@pytest.mark.parametrize("victim", ["last", "first"], ids=["root-killed", "worker-killed"])
def test_a_rank_killed_mid_decode_fails_the_other_cleanly(victim, tmp_path):
    ids = prompt_ids(2 * SEGMENT)
    procs = start_run_ranks(ids, 2, tmp_path, n_new=1500)
    killed, survivor = (procs[1], procs[0]) if victim == "last" else (procs[0], procs[1])
    try:
        assert os.read(survivor.stdout.fileno(), 1), "no token streamed"  # decoding has begun
        time.sleep(0.2)
        assert survivor.poll() is None and killed.poll() is None, "the ranks finished before the kill"
        t0 = time.monotonic()
        killed.send_signal(signal.SIGKILL)
        (rc, out, err), = finish([survivor], timeout=120)
        elapsed = time.monotonic() - t0
    finally:
        killed.kill()
        killed.wait()
    assert rc == 1, f"exit {rc}: {err[-2000:]}"  # an error, not a crash
    assert "a peer is gone" in err, err[-2000:]
    meta = json.loads(out.strip().splitlines()[-1])
    assert "a peer is gone" in meta["error"]
    assert meta["kv_pages_held"] == 0, "the failed request's pages are released"
    assert elapsed < 20, f"the surviving rank took {elapsed:.1f} s to give up"


def test_a_prompt_too_short_for_the_ranks_is_refused_on_every_rank(tmp_path):
    """5 tokens cannot give 2 ranks a page each: both say so, before any exchange."""
    for rc, _, err in finish(start_run_ranks(prompt_ids(5), 2, tmp_path, n_new=4), timeout=300):
        assert rc == 1 and "leaves shard rank 1 of 2 no positions" in err, err[-2000:]


def test_shard_tokens_fixes_every_boundary_but_the_last(tmp_path):
    """--shard-tokens 256 on 2 ranks: rank 0 holds [0, 256) of a 768-token prompt, the last rank the
    rest. Two segments on the last rank merge in another order than the one host's, and the model's
    quantized activations carry the rounding on: an equal cut of this prompt, (0, 384), is off
    the one host's log-probabilities by up to 0.07, this one by up to 0.11."""
    ids, n_new = prompt_ids(3 * SEGMENT), 8  # greedy texts that part where two tokens are nearly tied end later
    want = one_host_run(ids, n_new)
    results = finish(start_run_ranks(ids, 2, tmp_path, n_new, extra=("--shard-tokens", str(SEGMENT))))
    for rank, (rc, _, err) in enumerate(results):
        assert rc == 0, f"rank {rank} exit {rc}: {err[-2000:]}"
    metas = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results]
    assert [(m["pos_begin"], m["pos_end"]) for m in metas] == [(0, SEGMENT), (SEGMENT, 3 * SEGMENT)]
    for m in metas:
        assert m["reused_tokens"] == 0 and m["set_reused_tokens"] == 0  # one request per process
        assert m["kv_pages_held"] == 0
        assert m["generated_ids"] == want["generated_ids"], m["shard_rank"]
        assert m["logprobs"] == pytest.approx(want["logprobs"], abs=0.25)
