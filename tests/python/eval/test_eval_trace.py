"""`stride eval --trace-failures` on SmolLM2 at 1K: every needle that
top-k at sparsity 0.9 misses where dense finds it carries a trace of the
first decode step's selection per layer and kv head. The trace must be
consistent (ranks within the candidate count, masses in [0, 1] summing to at
most 1, selected exactly when ranked within the budget), and its exact
attention masses must match the attention weights HF transformers computes
on the dequantized GGUF for the same token ids."""
import json
import os
import subprocess

import pytest

import stride_cli

MODEL = os.path.join(stride_cli.ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
POLICY = "topk:sparsity=0.9"


@pytest.fixture(scope="module")
def report(stride, tmp_path_factory):
    out = tmp_path_factory.mktemp("trace") / "e.json"
    p = subprocess.run([stride.binary, "eval", "-m", MODEL, "--lengths", "1024", "-a", POLICY, "--trace-failures",
                        "--tasks", "niah_single", "--depths", "3", "--threads", "2", "--json", str(out)],
                       capture_output=True, timeout=600, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return json.loads(out.read_text())


def traced(report):
    dense = {t["prompt_sha256"]: t["score"] for t in report["trials"] if t["policy"] == "dense"}
    missed = [t for t in report["trials"]
              if t["policy"] == POLICY and t["score"] < 1 and dense[t["prompt_sha256"]] == 1]
    return missed


def test_every_missed_needle_is_traced(report):
    missed = traced(report)
    # SmolLM2 loses needles under top-k 0.9 (docs/long-context.md): the check is not empty.
    assert missed
    for t in missed:
        assert "trace" in t
    for t in report["trials"]:
        if t["policy"] == "dense" or t["score"] == 1:
            assert "trace" not in t


def test_trace_is_consistent(report):
    for t in traced(report):
        tr = t["trace"]
        ps = tr["page_size"]
        assert tr["query_position"] == len(tr["ids"]) - 1 == t["tokens"]
        assert len(tr["needles"]) == 1 and tr["needles"][0]["asked"]
        first, end = tr["needles"][0]["tokens"]
        assert 0 <= first < end <= t["tokens"]
        assert tr["needles"][0]["pages"] == [first // ps, (end - 1) // ps]
        layers = {h["layer"] for h in tr["heads"]}
        assert layers == set(range(30))  # every SmolLM2 layer is top-k
        assert len(tr["heads"]) == 30 * 3
        outcomes = []
        for h in tr["heads"]:
            assert h["pages"] == tr["query_position"] // ps + 1
            assert 0 <= h["budget"] <= h["candidates"] < h["pages"]
            assert 0 <= h["selected_mass"] <= h["oracle_mass"] + 1e-9 <= 1 + 1e-6
            pages = h["needle_pages"]
            assert [p["page"] for p in pages] == list(range(first // ps, (end - 1) // ps + 1))
            assert sum(p["mass"] for p in pages) <= 1 + 1e-9
            for p in pages:
                assert 0 <= p["mass"] <= 1
                if p["fixed"]:
                    assert p["selected"] and p["rank_estimate"] is None and p["rank_exact"] is None
                    continue
                assert 0 <= p["rank_estimate"] < h["candidates"] and 0 <= p["rank_exact"] < h["candidates"]
                assert p["selected"] == (p["rank_estimate"] < h["budget"])
            unread = [p for p in pages if not p["selected"]]
            want = ("read" if not unread else
                    "estimate_miss" if all(p["rank_exact"] < h["budget"] for p in unread) else "budget_miss")
            assert h["outcomes"] == [want]
            outcomes.append(want)
        s = tr["summary"]
        for k in ("read", "estimate_miss", "budget_miss"):
            assert s[k] == pytest.approx(outcomes.count(k) / len(outcomes))


def test_exact_mass_matches_transformers(report):
    """Layer 0 only: its queries and keys come from the embeddings alone. In
    later layers the policy's own sparse attention (prefill and this step)
    has moved the hidden states away from a dense run, so HF's dense
    attention there is another computation (per-page masses differ by up to
    0.4 on this prompt set), not a reference."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(2)
    d, f = os.path.dirname(MODEL), os.path.basename(MODEL)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype="float32",
                                                 attn_implementation="eager").eval()
    model.model.layers = model.model.layers[:1]
    group = model.config.num_attention_heads // model.config.num_key_value_heads
    diffs = []
    for t in traced(report):
        tr = t["trace"]
        ps = tr["page_size"]
        with torch.no_grad():
            out = model.model(torch.tensor([tr["ids"]]), output_attentions=True)
        weights = out.attentions[0][0, :, -1, :].double()  # [heads, keys] of the traced query
        for h in tr["heads"]:
            if h["layer"] != 0:
                continue
            mine = weights[h["kv_head"] * group:(h["kv_head"] + 1) * group].mean(0)
            for p in h["needle_pages"]:
                want = float(mine[p["page"] * ps:(p["page"] + 1) * ps].sum())
                diffs.append(abs(p["mass"] - want))
    assert len(diffs) >= 3 * len(traced(report))
    # Q4_1 weights run by two engines and f16 keys: close, not equal (measured max 5e-4).
    assert max(diffs) < 2e-3, max(diffs)
