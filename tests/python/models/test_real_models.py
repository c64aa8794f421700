"""stride vs llama.cpp (llama-cpp-python) on the real quantized models.

Run: ~/.cache/stride/venv/bin/python -m pytest -q tests/python/models/test_real_models.py -s
Goldens come from scripts/oracles/llamacpp_goldens.py (via scripts/setup):
greedy llama.cpp continuations with top-K log-probs, and tokenizations; and
from scripts/oracles/dequant_reference.py: the exact f32 evaluation of the
dequantized weights (HF transformers) on the same sequences.
"""
import json
import os

import numpy as np
import pytest

from conftest import ROOT

MODELS = ["smollm2", "gemma3"]
# Top-1 agreement with llama.cpp at every teacher-forced position. Quantized
# engines disagree at near ties: llama.cpp's own batched vs step-by-step argmax
# agree at only ~98.5% of these positions, and llama.cpp agrees with the exact
# f32 evaluation of the same quantized weights at 97.7-98.8%. So 99% is asked
# where llama.cpp's choice is decisive (leads by DECISIVE_GAP nats), and the
# raw figure over all positions must reach MIN_TOP1_ALL. That floor sits at
# 96%: on Gemma-3 the same stride kernels score 250/256 with f16 KV and
# 248/256 with f32 KV, so one or two near-tie positions are rounding noise.
MIN_TOP1_DECISIVE = 0.99
DECISIVE_GAP = 0.5          # nats between llama.cpp's top-1 and top-2
MIN_TOP1_ALL = 0.96
MAX_MEAN_KL = 0.02          # nats, llama.cpp || stride, truncated to llama.cpp's top-K
MAX_DIVERGENCE_GAP = 1.0    # nats: a free-running divergence must be a near tie
# vs the exact f32 evaluation of the dequantized weights (dequant_reference.py)
MIN_TOP1_EXACT = 0.97
MAX_MEAN_KL_EXACT = 0.01


def _model_path(goldens, key):
    return os.path.join(ROOT, "models", goldens["models"][key]["file"])


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


@pytest.fixture(scope="module")
def teacher_forced(stride, goldens):
    """Per model: stride's log-probs at every generated position of every prompt."""
    out = {}
    for key in MODELS:
        rows = []
        for case in goldens["models"][key]["cases"]:
            p, gen = case["prompt_ids"], case["generated_ids"]
            logits = stride.score(_model_path(goldens, key), p + gen[:-1])
            rows.append(_log_softmax(logits[len(p) - 1:]))  # [n_gen, n_vocab]
        out[key] = rows
    return out


@pytest.fixture(scope="module")
def exact_reference():
    path = os.path.join(ROOT, "tests", "data", "generated", "dequant_reference.json")
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run scripts/setup")
    with open(path) as f:
        return json.load(f)


def _llamacpp_exact_rate(goldens, exact_reference, key):
    """How often llama.cpp's own top-1 equals the exact f32 evaluation's: the
    oracle's noise on this CPU (its AVX2 build rounds differently from its
    AVX-512 one)."""
    agree = total = 0
    for case, ref in zip(goldens["models"][key]["cases"], exact_reference["models"][key]["cases"]):
        mine = np.array([ids[0] for ids in case["tf_topk_ids"]])
        exact = np.array([ids[0] for ids in ref["topk_ids"]])
        agree, total = agree + int((mine == exact).sum()), total + len(exact)
    return agree / total


@pytest.mark.parametrize("key", MODELS)
def test_teacher_forced_top1_and_kl(goldens, teacher_forced, exact_reference, key):
    """stride's one-pass scores of prompt + llama.cpp's greedy continuation vs
    llama.cpp's own one-pass scores of the same ids (like for like: llama.cpp's
    batched and step-by-step argmaxes themselves differ at ~1% of positions)."""
    agree = agree_steps = total = dec_agree = dec_total = 0
    kls, mismatch_gaps = [], []
    for case, lp in zip(goldens["models"][key]["cases"], teacher_forced[key]):
        gen = case["generated_ids"]
        ref_top1 = np.array([ids[0] for ids in case["tf_topk_ids"]])
        mine = lp.argmax(axis=-1)
        hits = int((mine == ref_top1).sum())
        hits_steps = int((mine == np.array(gen)).sum())
        gaps = np.array([lps[0] - lps[1] for lps in case["tf_topk_logprobs"]])
        decisive = gaps >= DECISIVE_GAP
        dec_agree += int((mine == ref_top1)[decisive].sum())
        dec_total += int(decisive.sum())
        kl = []
        for i in range(len(gen)):
            ids = np.array(case["tf_topk_ids"][i])
            lp_ref = np.array(case["tf_topk_logprobs"][i])
            kl.append(float((np.exp(lp_ref) * (lp_ref - lp[i, ids])).sum()))
        agree, agree_steps, total = agree + hits, agree_steps + hits_steps, total + len(gen)
        kls += kl
        worst = [(int(i), round(case["tf_topk_logprobs"][i][0] - float(
                  dict(zip(case["tf_topk_ids"][i], case["tf_topk_logprobs"][i])).get(int(mine[i]), -99)), 3))
                 for i in np.nonzero(mine != ref_top1)[0]]
        mismatch_gaps += [g for _, g in worst]
        print(f"\n{key}/{case['name']}: top-1 vs llama.cpp batch {hits}/{len(gen)}, "
              f"vs llama.cpp step-by-step {hits_steps}/{len(gen)}, KL mean {np.mean(kl):.4f} "
              f"max {np.max(kl):.4f}; (pos, llama.cpp log-prob gap) {worst}")
    rate, dec_rate = agree / total, dec_agree / max(1, dec_total)
    print(f"{key}: teacher-forced top-1 agreement {agree}/{total} = {rate:.2%} "
          f"(vs step-by-step tokens {agree_steps}/{total}); at decisive positions "
          f"{dec_agree}/{dec_total} = {dec_rate:.2%}; mean KL {np.mean(kls):.4f}")
    # Over all positions, stride need not agree with llama.cpp more often than
    # llama.cpp agrees with the exact evaluation (less a point for ties).
    floor = min(MIN_TOP1_ALL, _llamacpp_exact_rate(goldens, exact_reference, key) - 0.01)
    print(f"{key}: all-position floor {floor:.4f}; largest llama.cpp gap at a mismatch "
          f"{max(mismatch_gaps, default=0):.3f} nats")
    assert dec_rate >= MIN_TOP1_DECISIVE
    assert rate >= floor
    assert max(mismatch_gaps, default=0) < MAX_DIVERGENCE_GAP  # every mismatch is a near tie
    assert np.mean(kls) <= MAX_MEAN_KL


@pytest.mark.parametrize("key", MODELS)
def test_teacher_forced_vs_exact_dequantized(goldens, teacher_forced, exact_reference, key):
    """stride vs HF f32 run on the GGUF's dequantized weights: how close stride
    is to the exact function of the quantized model (llama.cpp printed alongside)."""
    agree = agree_llama = total = 0
    kls = []
    for case, ref, lp in zip(goldens["models"][key]["cases"],
                             exact_reference["models"][key]["cases"], teacher_forced[key]):
        ref_top1 = np.array([ids[0] for ids in ref["topk_ids"]])
        agree += int((lp.argmax(axis=-1) == ref_top1).sum())
        agree_llama += int((np.array([ids[0] for ids in case["tf_topk_ids"]]) == ref_top1).sum())
        total += len(ref_top1)
        for i in range(len(ref_top1)):
            ids, lr = np.array(ref["topk_ids"][i]), np.array(ref["topk_logprobs"][i])
            kls.append(float((np.exp(lr) * (lr - lp[i, ids])).sum()))
    print(f"\n{key}: top-1 vs exact dequantized f32: stride {agree}/{total}, "
          f"llama.cpp {agree_llama}/{total}; mean KL(exact || stride) {np.mean(kls):.5f}")
    assert agree / total >= MIN_TOP1_EXACT
    assert np.mean(kls) <= MAX_MEAN_KL_EXACT


@pytest.mark.parametrize("key", MODELS)
def test_free_running_greedy(stride, goldens, key):
    """stride's own greedy decode: count leading tokens equal to llama.cpp's; where
    they part, llama.cpp's distribution must have been a near tie."""
    spec = goldens["models"][key]
    lead_total = gen_total = 0
    for case in spec["cases"]:
        ref = case["generated_ids"]
        res = stride.run(_model_path(goldens, key), case["prompt_ids"], len(ref))
        got = [int(t) for t in res["generated_ids"]]
        assert res["prompt_tokens"] == len(case["prompt_ids"])
        assert len(got) == len(ref) == res["generated_tokens"]
        lead = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), len(ref))
        lead_total, gen_total = lead_total + lead, gen_total + len(ref)
        print(f"\n{key}/{case['name']}: {lead}/{len(ref)} leading tokens match "
              f"(decode {res.get('decode_tok_s', 0):.1f} tok/s)")
        if lead < len(ref):
            ids, lps = case["topk_ids"][lead], case["topk_logprobs"][lead]
            assert got[lead] in ids, f"step {lead}: stride's token {got[lead]} not in llama.cpp top-{len(ids)}"
            gap = lps[0] - lps[ids.index(got[lead])]
            print(f"  diverged at step {lead}: llama.cpp log-prob gap {gap:.3f}")
            assert gap <= MAX_DIVERGENCE_GAP
    print(f"{key}: {lead_total}/{gen_total} leading tokens match in total")


@pytest.mark.parametrize("key", MODELS)
def test_tokenizer_matches_llamacpp(stride, goldens, key):
    spec = goldens["models"][key]
    bad = []
    for item in spec["tokenize"]:
        got = stride.tokenize(_model_path(goldens, key), item["text"])
        if got != item["ids"]:
            bad.append((item["text"][:40], got[:12], item["ids"][:12]))
    print(f"\n{key}: {len(spec['tokenize']) - len(bad)}/{len(spec['tokenize'])} texts tokenized identically")
    assert not bad, f"(text, stride, llama.cpp): {bad[:3]}"


@pytest.mark.parametrize("key", MODELS)
def test_prompt_tokenization_with_special_tokens(stride, goldens, key):
    """Prompts as `stride run --prompt` sees them: special tokens (<|im_start|>)
    parsed, BOS as the model's metadata says (Gemma: yes, SmolLM2: no)."""
    bos = key == "gemma3"
    for case in goldens["models"][key]["cases"]:
        got = stride.tokenize(_model_path(goldens, key), case["prompt"], bos=bos)
        assert got == case["prompt_ids"], case["name"]
