"""`stride score` across a shard set against the one-host `stride score`:
ranks as processes on loopback meeting through a rendezvous directory, each
running its contiguous share of the prompt through every layer, the earlier
ranks' KV passed around a ring at each layer.

Where every rank after the first holds exactly one of the attention kernel's
segments (8 pages of 32 tokens: 256 positions), the merge of the ranks'
partial softmax states folds the same terms in the same order as the one-host
kernel, so the logits must be byte-identical (2 ranks x 256 and 4 ranks x 256
tokens, dense and R-SWA); other splits group the same sums differently and
must agree to rounding (same argmax almost everywhere, small |delta|).

Failure: a rank killed mid-prefill makes the others exit at once with "a peer
is gone"; a rank that stalls (SIGSTOP) makes its peers exit at their deadline
with "timed out" and the rest with "a peer is gone" as those close their
connections; top-k that selects on prompt chunks is refused with a clear
error (with prefill=dense it reads every page in prefill: the one-host bytes)."""
import json
import signal
import subprocess
import time

import numpy as np
import pytest

from shard_ranks import (PAGE, SEGMENT, finish, model_info, one_host_logits, page_image_bytes, prompt_ids,
                         ring_bytes_per_layer, run_sharded_score, start_score_ranks, wait_connected)
from stride_server import SMOL, binary


@pytest.fixture(scope="module")
def smol_info():
    return model_info()


# chunk: --shard-chunk, each rank running its 256 positions through a layer that many at a time
# (0: the prefill chunk, 256: one); 96 ends off a 32-token page, 64 on one.
@pytest.mark.parametrize("world,n,policy,chunk", [(2, 2 * SEGMENT, "dense", 0), (4, 4 * SEGMENT, "dense", 0),
                                                 (4, 4 * SEGMENT, "rswa:sinks=4,window=64", 0),
                                                 (2, 2 * SEGMENT, "topk:sparsity=0.9,prefill=dense", 0),
                                                 (4, 4 * SEGMENT, "dense", 96),
                                                 (4, 4 * SEGMENT, "rswa:sinks=4,window=64", 64)],
                         ids=["2x256-dense", "4x256-dense", "4x256-rswa", "2x256-topk-prefill-dense",
                              "4x256-dense-chunk96", "4x256-rswa-chunk64"])
def test_shards_on_segment_boundaries_give_the_one_host_bytes(world, n, policy, chunk, tmp_path, smol_info):
    ids = prompt_ids(n)
    want = one_host_logits(ids, tmp_path, policy)
    got, metas = run_sharded_score(ids, world, tmp_path, policy,
                                   extra=lambda rank: ["--shard-chunk", str(chunk)] if chunk else [])
    assert [(m["pos_begin"], m["pos_end"]) for m in metas] == [(r * SEGMENT, (r + 1) * SEGMENT) for r in range(world)]
    diff = np.abs(got - want).max(axis=1)
    bad = np.nonzero(diff)[0]
    assert len(bad) == 0, f"{len(bad)} of {n} positions differ, the first at {bad[0]} by up to {diff.max():.3g}"

    # Payload: per layer, the ring prefill (the pages of earlier ranks the next rank sees, and every
    # rank's positions agreed); 48 bytes agreeing on the prompt and the layout (S and the cut); ranks after 0 also send
    # their logits rows.
    shards = [(r * SEGMENT, (r + 1) * SEGMENT) for r in range(world)]
    for m in metas:
        want_ring = smol_info["n_layer"] * ring_bytes_per_layer(policy, shards, m["shard_rank"], smol_info)
        assert m["ring_bytes"] == want_ring, m
        assert m["payload_bytes_sent"] - m["logits_bytes_sent"] - 48 == want_ring, m
        rows = m["pos_end"] - m["pos_begin"]
        assert m["logits_bytes_sent"] == (0 if m["shard_rank"] == 0 else rows * m["n_vocab"] * 4)
        # A rank's pool holds its own positions only: a 1/W share of the prompt's KV.
        kv_page = page_image_bytes(smol_info) - PAGE * 4
        assert m["peak_kv_bytes"] == smol_info["n_layer"] * (rows // PAGE) * kv_page, m


def test_a_fixed_run_gives_the_one_host_bytes(tmp_path):
    """--shard-tokens 256 on 2 ranks: a 384-token prompt is cut [0, 256) + [256, 384), not equally
    (192 + 192): on the kernel's segment boundary, so the logits are the one host's bytes."""
    ids = prompt_ids(SEGMENT + SEGMENT // 2)
    want = one_host_logits(ids, tmp_path)
    got, metas = run_sharded_score(ids, 2, tmp_path, extra=lambda rank: ["--shard-tokens", str(SEGMENT)])
    assert [(m["pos_begin"], m["pos_end"]) for m in metas] == [(0, SEGMENT), (SEGMENT, len(ids))]
    assert np.array_equal(got, want)


# The layout: balanced (--shard-tokens 0) or automatic (the default: the context, here the prompt,
# over the ranks in whole segments: 256).
@pytest.mark.parametrize("layout,cut", [(["--shard-tokens", "0"], 2 * SEGMENT), ([], SEGMENT)], ids=["balanced", "auto"])
def test_other_splits_agree_to_rounding(layout, cut, tmp_path):
    """Rounding moved by a different grouping of the same sums is amplified by the
    quantized activations; its yardstick is the one host's own change from f16
    to f32 KV, a change of the same kind (SmolLM2, 2026-12-06: both move a row's
    largest logit by 0.6 on average and flip 5% of the argmaxes, at near-ties)."""
    ids = prompt_ids(700)  # 2 ranks on segments: balanced by prefill cost 512 + 188, automatic 256 + 444
    want = one_host_logits(ids, tmp_path)
    yardstick = one_host_logits(ids, tmp_path, kv="f32")
    got, metas = run_sharded_score(ids, 2, tmp_path, extra=lambda rank: layout)
    assert [(m["pos_begin"], m["pos_end"]) for m in metas] == [(0, cut), (cut, 700)]
    assert np.array_equal(got[:cut], want[:cut]), "rank 0 attends to its own keys only: the one-host bytes"

    def drift(x):
        return np.abs(x[cut:] - want[cut:]).max(axis=1).mean(), np.mean(x[cut:].argmax(1) == want[cut:].argmax(1))

    (d_sharded, same_sharded), (d_kv, same_kv) = drift(got), drift(yardstick)
    assert d_sharded <= 1.5 * d_kv, f"mean largest |delta| {d_sharded:.3g}, f16 vs f32 KV {d_kv:.3g}"
    assert same_sharded >= same_kv - 0.03, f"argmax agrees at {same_sharded:.1%}, f16 vs f32 KV {same_kv:.1%}"


@pytest.mark.parametrize("how", ["killed", "stalled"])
def test_a_lost_rank_fails_the_others_cleanly(how, tmp_path):
    ids = prompt_ids(4 * SEGMENT)
    timeout_ms = 60000 if how == "killed" else 8000
    procs = start_score_ranks(ids, 4, tmp_path, timeout_ms=timeout_ms)
    victim = procs[2]
    try:
        wait_connected(victim)
        time.sleep(0.3)  # inside the prefill: the ranks connected, then exchange at every layer
        t0 = time.monotonic()
        victim.send_signal(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        others = finish([p for p in procs if p is not victim], timeout=timeout_ms / 1000 + 60)
        elapsed = time.monotonic() - t0
    finally:
        victim.kill()
        victim.wait()
    # A stalled rank's peers time out, then close their connections, so the rest learn at once that they are gone.
    for rc, _, err in others:
        assert rc != 0, "a rank finished a prompt whose shard set lost a rank"
        assert "a peer is gone" in err or (how == "stalled" and "timed out" in err), err[-2000:]
        assert "ring pass failed" in err or "allreduce max failed" in err, err[-2000:]  # inside the layers' exchanges
    if how == "stalled":
        assert any("timed out" in err for _, _, err in others), [err[-300:] for _, _, err in others]
    # Killed: at once, far inside the 60 s deadline. Stalled: at the 8 s deadline, not a hang.
    assert elapsed < (20 if how == "killed" else 8 + 30), f"the other ranks took {elapsed:.1f} s to give up"


def test_top_k_and_incomplete_options_are_refused(tmp_path):
    ids = prompt_ids(2 * SEGMENT)
    for rc, _, err in finish(start_score_ranks(ids, 2, tmp_path, policy="topk:sparsity=0.5"), timeout=300):
        assert rc != 0 and "top-k attention across shard ranks" in err and "prefill=dense" in err, err[-2000:]
    r = subprocess.run([binary(), "score", "-m", SMOL, "--ids", "1 2 3", "--shard-world", "2", "-o",
                        str(tmp_path / "x.f32")], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--rendezvous" in r.stderr, r.stderr
