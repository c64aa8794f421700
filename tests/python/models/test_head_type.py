"""--head-type: stride's load-time Q4_K / Q5_K / Q4_0 / Q5_0 head against
llama.cpp running the same model with its head quantized by llama.cpp's
quantizer, and the requantized head's blocks decoded by the `gguf` package.

Run: ~/.cache/stride/venv/bin/python -m pytest -q tests/python/models/test_head_type.py -s
The model and llama.cpp's logits come from scripts/oracles/head_type_model.py
(via scripts/setup): a random llama with 256-wide rows, f32 weights, and
copies whose output.weight llama.cpp quantized to Q4_K / Q5_K / Q4_0 / Q5_0;
and llama.cpp's logits on Qwen2.5-Coder-0.5B (n_embd 896, Q8_0 head) with its
head quantized to Q5_0.
"""
import json
import os

import numpy as np
import pytest

from conftest import GEN, ROOT
from stride_cli import StrideError

DIR = os.path.join(GEN, "head_type")
MODEL = os.path.join(DIR, "model-f32.gguf")
QWEN = os.path.join(ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
HEADS = ["q4_k", "q5_k", "q4_0", "q5_0"]
# The two quantizers round the head's rows differently (neither's blocks are
# the other's), so the logits differ by about as much as either differs from
# the f32 head; the limits are test_quant_types.py's. On llama.cpp's own
# quantized file stride's logits match llama.cpp's to float rounding.
MAX_MEAN_KL = 0.02    # nats, llama.cpp || stride, full distributions
MIN_TOP1 = 0.97       # at the positions where llama.cpp leads by DECISIVE_GAP
DECISIVE_GAP = 0.5
MAX_MEAN_KL_SAME_FILE = 1e-6


def _fixture(name):
    path = os.path.join(DIR, name)
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run scripts/setup")
    return path


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def _kl(ref_logits, logits):
    lr, lp = _log_softmax(ref_logits), _log_softmax(logits)
    return (np.exp(lr) * (lr - lp)).sum(axis=-1)


@pytest.mark.parametrize("head", HEADS)
def test_matches_llamacpp_with_its_quantized_head(stride, head):
    ids = json.load(open(_fixture("ids.json")))
    theirs = np.load(_fixture(f"logits-{head}.npy"))
    theirs_f32 = np.load(_fixture("logits-f32.npy"))
    mine = stride.score(MODEL, ids, extra=["--head-type", head, "--kv-type", "f32"])
    kl = _kl(theirs, mine)
    kl_to_f32 = _kl(theirs_f32, mine)
    top = np.sort(theirs, axis=-1)
    decisive = (top[:, -1] - top[:, -2]) >= DECISIVE_GAP
    agree = mine.argmax(-1) == theirs.argmax(-1)
    print(f"\n{head}: mean KL to llama.cpp's {head} head {kl.mean():.2e} (max {kl.max():.2e}); "
          f"to llama.cpp's f32 head {kl_to_f32.mean():.2e}; top-1 {agree.sum()}/{len(ids)}, "
          f"decisive {agree[decisive].sum()}/{decisive.sum()}")
    assert kl.mean() <= MAX_MEAN_KL
    assert agree[decisive].mean() >= MIN_TOP1
    # A head of this type rather than the f32 one: nearer llama.cpp's quantized head than its f32 head.
    # Not for Q4_0 / Q5_0: llama.cpp's blocks there take the plain max-magnitude scale, whose error is
    # as large as the distance between the two quantizers' blocks, so neither side is the nearer.
    if head.endswith("_k"):
        assert kl.mean() < kl_to_f32.mean()


@pytest.mark.parametrize("head", HEADS)
def test_runs_llamacpps_quantized_head_as_llamacpp(stride, head):
    ids = json.load(open(_fixture("ids.json")))
    theirs = np.load(_fixture(f"logits-{head}.npy"))
    path = _fixture(f"model-{head}-head.gguf")
    info = stride.info(path)
    assert info["output_head"]["type"] == head.upper()
    kl = _kl(theirs, stride.score(path, ids, extra=["--kv-type", "f32"]))
    print(f"\n{head} (llama.cpp's blocks): mean KL {kl.mean():.2e}")
    assert kl.mean() <= MAX_MEAN_KL_SAME_FILE


@pytest.mark.parametrize("head,type_name", [("file", "F32")] + [(h, h.upper()) for h in HEADS])
def test_info_reports_the_head_type_in_effect(stride, head, type_name):
    info = json.loads(stride._call(["info", "--model", MODEL, "--json", "--head-type", head]))
    h = info["output_head"]
    assert (h["tensor"], h["file_type"], h["type"]) == ("output.weight", "F32", type_name)
    assert h["requantized"] == (head != "file")
    text = stride._call(["info", "--model", MODEL, "--head-type", head])
    assert f"output head:     {type_name}" in text


@pytest.mark.parametrize("head", HEADS)
def test_gguf_decodes_the_requantized_rows(stride, head):
    import gguf
    from gguf.quants import dequantize
    qtype = getattr(gguf.GGMLQuantizationType, head.upper())
    info = json.loads(stride._call(["info", "--model", MODEL, "--json", "--head-type", head,
                                    "--head-rows", "8"]))
    rows = info["output_head"]["rows"]
    assert len(rows) == 8
    src = gguf.GGUFReader(MODEL)
    f32 = np.asarray(next(t for t in src.tensors if t.name == "output.weight").data).reshape(256, 256)
    llama_rows = gguf.GGUFReader(_fixture(f"model-{head}-head.gguf"))
    theirs_q = next(t for t in llama_rows.tensors if t.name == "output.weight")
    theirs = dequantize(np.asarray(theirs_q.data).copy(), qtype).reshape(256, 256)
    err_mine = err_theirs = 0.0
    for r in rows:
        raw = np.frombuffer(bytes.fromhex(r["bytes_hex"]), dtype=np.uint8)
        decoded = dequantize(raw.copy(), qtype).reshape(-1).astype(np.float32)
        mine = np.array(r["values"], dtype=np.float32)
        assert np.array_equal(decoded.view(np.uint32), mine.view(np.uint32)), f"row {r['row']}"
        err_mine += float(((mine - f32[r["row"]]) ** 2).sum())
        err_theirs += float(((theirs[r["row"]] - f32[r["row"]]) ** 2).sum())
    ratio = (err_mine / err_theirs) ** 0.5
    print(f"\n{head}: RMSE stride / llama.cpp on 8 head rows {ratio:.4f}")
    assert ratio <= 1.05


def test_qwen_q5_0_head_matches_llamacpp_with_its_q5_0_head(stride):
    """Qwen2.5-0.5B's rows (896) are not whole K-quant super-blocks but are
    whole 32-element blocks: its Q8_0 head runs in Q5_0."""
    if not os.path.exists(QWEN):
        pytest.fail(f"{QWEN} missing: run scripts/fetch_models")
    ids = json.load(open(_fixture("qwen-ids.json")))
    theirs = np.load(_fixture("qwen-logits-q5_0.npy"))
    info = json.loads(stride._call(["info", "--model", QWEN, "--json", "--head-type", "q5_0"]))
    assert (info["output_head"]["file_type"], info["output_head"]["type"]) == ("Q8_0", "Q5_0")
    mine = stride.score(QWEN, ids, extra=["--head-type", "q5_0", "--kv-type", "f32"])
    as_stored = stride.score(QWEN, ids, extra=["--kv-type", "f32"])
    kl = _kl(theirs, mine)
    kl_as_stored = _kl(theirs, as_stored)
    top = np.sort(theirs, axis=-1)
    decisive = (top[:, -1] - top[:, -2]) >= DECISIVE_GAP
    agree = mine.argmax(-1) == theirs.argmax(-1)
    print(f"\nqwen q5_0: mean KL to llama.cpp's Q5_0 head {kl.mean():.2e} (max {kl.max():.2e}); "
          f"stride's Q8_0 head to it {kl_as_stored.mean():.2e}; top-1 {agree.sum()}/{len(ids)}, "
          f"decisive {agree[decisive].sum()}/{decisive.sum()}")
    assert kl.mean() <= MAX_MEAN_KL
    assert agree[decisive].mean() >= MIN_TOP1


def test_refuses_rows_that_are_not_whole_super_blocks(stride):
    tiny = os.path.join(GEN, "tiny", "llama", "model-f32.gguf")  # n_embd 64
    with pytest.raises(StrideError, match="multiple of 256"):
        stride.score(tiny, [1, 2, 3], extra=["--head-type", "q4_k"])
    with pytest.raises(StrideError, match="multiple of 256"):
        stride._call(["info", "--model", tiny, "--head-type", "q4_k"])


def test_rejects_an_unknown_head_type(stride):
    with pytest.raises(StrideError, match="head-type"):
        stride.score(MODEL, [1, 2, 3], extra=["--head-type", "q8_0"])
