"""Logits must not depend on how a prompt is cut into prefill chunks: `stride
score --chunk N` for N in 1 (token by token, the decode path), 7, 33, 100 and
256 gives the same bytes as one 512-token chunk, on both real quantized models,
for f16, f32 and int8 KV, dense and R-SWA.

A row of attention used to be summed in an order that depended on the call:
keys left over after groups of four were summed by another routine, and the
softmax denominator added a page's last partial vector in scalar order. So a
page holding n valid keys gave different bits from the same page holding more
keys with the extra ones masked, and int8 re-quantization of the activations
amplified that into 0.5-1.2 logit differences (SmolLM2, 2026-12-01).

When a call has few query blocks (decode, short chunks of Gemma-3's single
KV head), the attention splits a row's pages across threads. It used to merge
the pieces in an order set by the thread count, which changed the bits past
16 pages. Rows are now summed in segments of 8 pages cut at fixed key
positions and folded in order on every path. 600 tokens (19 pages) cover that,
and one case compares 1 thread against 2."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

from stride_server import GEMMA, SMOL, binary

ROOT = pathlib.Path(__file__).resolve().parents[3]
N_TOKENS = 600
CHUNKS = [1, 7, 33, 100, 256]


def ids_of(model):
    text = (ROOT / "docs" / "serving.md").read_text()
    r = subprocess.run([binary(), "tokenize", "-m", model, "-p", text], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ids = r.stdout.split()[:N_TOKENS]
    assert len(ids) == N_TOKENS
    return " ".join(ids)


def score(model, ids, chunk, kv, policy, out, threads=2):
    r = subprocess.run([binary(), "score", "-m", model, "--ids", ids, "--chunk", str(chunk), "--kv-type", kv,
                        "--attention", policy, "--threads", str(threads), "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    meta = json.loads(r.stdout.strip().splitlines()[-1])
    return np.fromfile(out, dtype=np.float32).reshape(meta["n_tokens"], meta["n_vocab"])


CASES = [(SMOL, "f16", "dense"), (SMOL, "int8", "dense"), (SMOL, "f32", "rswa:sinks=4,window=64"),
         (GEMMA, "f16", "dense"), (GEMMA, "int8", "dense")]


@pytest.mark.parametrize("model,kv,policy", CASES,
                         ids=[f"{pathlib.Path(m).stem.split('-')[0]}-{kv}-{p.split(':')[0]}" for m, kv, p in CASES])
def test_every_chunk_size_gives_the_same_logits(model, kv, policy, tmp_path):
    ids = ids_of(model)
    whole = score(model, ids, 512, kv, policy, tmp_path / "whole.f32")
    for chunk in CHUNKS:
        part = score(model, ids, chunk, kv, policy, tmp_path / f"c{chunk}.f32")
        diff = np.abs(part - whole).max(axis=1)
        bad = np.nonzero(diff)[0]
        assert len(bad) == 0, (f"chunk {chunk}: {len(bad)} of {N_TOKENS} positions differ from one 512-token "
                               f"chunk, the first at {bad[0]} by up to {diff.max():.3g}")


def test_one_thread_gives_the_same_logits_as_two(tmp_path):
    ids = ids_of(GEMMA)
    two = score(GEMMA, ids, 1, "f16", "dense", tmp_path / "two.f32")
    one = score(GEMMA, ids, 1, "f16", "dense", tmp_path / "one.f32", threads=1)
    bad = np.nonzero(np.abs(one - two).max(axis=1))[0]
    assert len(bad) == 0, f"decode on 1 thread differs from 2 threads at {len(bad)} positions, the first {bad[0]}"
