"""Speculative decoding through the server.

- Greedy output with speculation (prompt lookup, a draft model) is token for
  token the output with it off (the per-request `speculative` field), with
  log-probs, for every attention policy kind and a per-layer mix, for single
  and concurrent requests; /metrics counts drafted and accepted tokens.
- Sampled output follows the same distribution: many seeds, first tokens of
  a quoting prompt, speculative against plain, a chi-square homogeneity test.
- Constrained requests decode plainly; a draft model of another vocabulary
  is refused at start-up; a bad `speculative` value is a 400.
"""
import concurrent.futures
import json
import math
import os
import tempfile
from collections import Counter

import pytest

from stride_server import GEMMA, SMOL, StrideServer

DOC = (
    "The lighthouse keeper wrote down the weather every morning at six. "
    "On the third of March the wind turned north and the sea grew rough. "
    "The supply boat was late by two days, so the keeper rationed the oil. "
    "When the boat finally came, it brought letters, flour and a new lamp. "
    "The new lamp burned brighter and could be seen from twenty miles away. "
)
QUOTE_PROMPT = "Document:\n" + DOC * 2 + "\n\nCopy the document above word for word.\n\nCopy:\nThe lighthouse keeper"
CODE_PROMPT = (
    "def total(items):\n    s = 0\n    for x in items:\n        s += x.price * x.count\n    return s\n\n"
    "# The same function, renamed to grand_total:\n"
    "def grand_total(items):\n"
)
FREE_PROMPT = "Once upon a time, in a small village by the sea, there lived an old"
# After " the", lookup drafts what followed the latest "on the"; the model is
# unsure between the places seen before, so drafts are often rejected.
PLACES_PROMPT = ("the cat sat on the mat. the dog sat on the rug. the cat sat on the sofa. "
                 "the dog sat on the bed. the cat sat on")


def complete(srv, prompt, speculative=None, max_tokens=48, **kw):
    body = {"model": srv.model_name, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 2}
    body.update(kw)
    if speculative is not None:
        body["speculative"] = speculative
    status, _, raw = srv.post("/v1/completions", body)
    assert status == 200, raw
    choice = json.loads(raw)["choices"][0]
    return choice["text"], choice["logprobs"]


def check_greedy_equal(srv, prompts):
    for p in prompts:
        off_text, off_lp = complete(srv, p, "off")
        on_text, on_lp = complete(srv, p)  # the server's default: on
        assert on_text == off_text
        assert on_lp["tokens"] == off_lp["tokens"]
        # The same logits rows: log-probs agree to the printed precision.
        assert on_lp["token_logprobs"] == pytest.approx(off_lp["token_logprobs"], abs=1e-5)
    # Concurrent requests share steps (drafts beside plain decodes and prefills).
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        spec = list(ex.map(lambda p: complete(srv, p)[0], prompts * 2))
    assert spec == [complete(srv, p, "off")[0] for p in prompts * 2]


POLICIES = {
    "dense": [],
    "window": ["--attention", "window:size=48"],
    "rswa": ["--attention", "rswa:sinks=4,window=48"],
    "topk": ["--attention", "topk:sparsity=0.5"],
}


@pytest.mark.parametrize("policy", list(POLICIES) + ["mixed"])
def test_prompt_lookup_greedy_equals_plain(policy, tmp_path):
    args = ["--speculative", "prompt-lookup", "--draft-max", "6"]
    config = None
    if policy == "mixed":
        cfg = tmp_path / "mixed.yaml"
        cfg.write_text('attention: "rswa:sinks=4,window=48"\npage_size: 16\n'
                       'layer_attention: ["10-19=topk:sparsity=0.5", "20-29=window:size=32"]\n')
        config = str(cfg)
    else:
        args += POLICIES[policy]
    with StrideServer(SMOL, extra_args=args, config=config) as srv:
        check_greedy_equal(srv, [QUOTE_PROMPT, CODE_PROMPT, FREE_PROMPT])
        m = srv.metrics()
        assert m["stride_spec_decode_num_draft_tokens_total"] > 0
        assert 0 < m["stride_spec_decode_num_accepted_tokens_total"] < m["stride_spec_decode_num_draft_tokens_total"]
        assert m["stride_spec_decode_acceptance_rate_count"] == m["stride_spec_decode_num_verify_steps_total"]


def test_draft_model_greedy_equals_plain():
    args = ["--speculative", "draft", "--draft-model", SMOL, "--draft-max", "4", "--attention", "rswa:sinks=4,window=48"]
    with StrideServer(SMOL, extra_args=args) as srv:
        check_greedy_equal(srv, [QUOTE_PROMPT, CODE_PROMPT])
        m = srv.metrics()
        assert m["stride_spec_decode_num_accepted_tokens_total"] > 0


def test_draft_model_of_another_vocabulary_is_refused():
    srv = StrideServer(SMOL, extra_args=["--speculative", "draft", "--draft-model", GEMMA], wait=False)
    try:
        assert srv.proc.wait(120) != 0
        assert "same vocabulary" in srv.logs()
    finally:
        srv.stop()
        os.unlink(srv.log.name)


def chi_square_bound(dof):
    """0.999 quantile of chi-square (Wilson-Hilferty)."""
    z = 3.090
    a = 1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))
    return dof * a ** 3


def homogeneity(a, b):
    """Chi-square statistic of two samples' category counts (rare categories pooled) and its dof."""
    n_a, n_b = sum(a.values()), sum(b.values())
    total = a + b
    common = [k for k, v in total.items() if v * min(n_a, n_b) / (n_a + n_b) >= 5]
    rows = [(a[k], b[k]) for k in common]
    rest = (n_a - sum(r[0] for r in rows), n_b - sum(r[1] for r in rows))
    if sum(rest) > 0:
        rows.append(rest)
    x2 = 0.0
    for ca, cb in rows:
        t = ca + cb
        for c, n in ((ca, n_a), (cb, n_b)):
            e = t * n / (n_a + n_b)
            x2 += (c - e) ** 2 / e
    return x2, len(rows) - 1


def test_sampled_output_follows_the_same_distribution():
    n = 320
    args = ["--speculative", "prompt-lookup", "--draft-max", "4", "--max-batch", "8"]
    with StrideServer(SMOL, extra_args=args) as srv:
        def sample(seed, mode):
            body = {"model": srv.model_name, "prompt": PLACES_PROMPT, "max_tokens": 4, "temperature": 1.0, "top_k": 6, "top_p": 1.0,
                    "seed": seed, "speculative": mode, "logprobs": 0}
            status, _, raw = srv.post("/v1/completions", body)
            assert status == 200, raw
            return tuple(json.loads(raw)["choices"][0]["logprobs"]["tokens"])

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            plain = list(ex.map(lambda s: sample(s, "off"), range(n)))
            spec = list(ex.map(lambda s: sample(10_000 + s, "prompt-lookup"), range(n)))
        m = srv.metrics()
    assert m["stride_spec_decode_num_accepted_tokens_total"] > 0
    # Tokens 2-4 come out of verification steps; compare each position and the whole.
    for key in (lambda t: t[1], lambda t: t[2], lambda t: t[1:]):
        x2, dof = homogeneity(Counter(map(key, plain)), Counter(map(key, spec)))
        assert dof >= 1
        assert x2 < chi_square_bound(dof), (x2, dof)


def test_constrained_requests_decode_plainly_and_bad_values_are_refused():
    with StrideServer(SMOL, extra_args=["--speculative", "prompt-lookup"]) as srv:
        body = {"model": srv.model_name, "prompt": QUOTE_PROMPT, "max_tokens": 8, "temperature": 0, "grammar": 'root ::= "The" [a-z ]*'}
        status, _, raw = srv.post("/v1/completions", body)
        assert status == 200, raw
        assert json.loads(raw)["choices"][0]["text"].startswith("The")
        for bad in ("sometimes", 3, ["draft"]):
            status, _, raw = srv.post("/v1/completions", {"model": srv.model_name, "prompt": "hi", "max_tokens": 2, "speculative": bad})
            assert status == 400, raw
            assert json.loads(raw)["error"]["param"] == "speculative"
        # "draft" on a server without a draft model.
        status, _, raw = srv.post("/v1/completions", {"model": srv.model_name, "prompt": "hi", "max_tokens": 2, "speculative": "draft"})
        assert status == 400, raw
