"""Shared pieces of the top-k analysis scripts (topk_mass.py, topk_sim.py,
topk_needle.py): loading a GGUF in HF transformers, finding the module whose
`apply_rotary_pos_emb` the attention calls, and stride's adaptive rule
`topk:mass=P` (src/attention/topk_selector.cpp) in torch.
"""
import importlib
import math
import os


def load(model_path, threads=None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if threads:
        torch.set_num_threads(threads)
    d, f = os.path.dirname(model_path), os.path.basename(model_path)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype="float32").eval()
    return tok, model


def attention_module(model):
    """The modeling module the attention layers live in. model_type does not
    name it for every model (Gemma-3's text model is `gemma3_text`, its code
    models/gemma3), the attention class does."""
    return importlib.import_module(type(model.model.layers[0].self_attn).__module__)


def global_layers(model):
    """Indices of the layers without a native sliding window: the ones stride's
    top-k sparsifies (every layer on SmolLM2, every sixth on Gemma-3)."""
    return [i for i, l in enumerate(model.model.layers) if not getattr(l.self_attn, "sliding_window", None)]


def logits_of(model, hidden):
    """The LM head (and Gemma's final soft cap, where the config has one) over
    hidden [n, hidden]: done in chunks by the callers, since a 262K vocabulary
    over 4K positions is 4 GB of logits."""
    import torch
    logits = model.lm_head(hidden)
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def mass_picks(P, est_fixed, est_cand, min_picks=0, max_picks=None):
    """topk_mass_picks: how many of the ranked candidates to read.

    est_fixed [..., F], est_cand [..., C] (best first): estimated log-masses,
    -inf where absent. Returns [...] picks: the fewest k in [min, max] whose
    candidates with the fixed groups hold P of sum(exp(est)). As in stride the
    sums are in double, relative to the largest estimate."""
    import torch
    C = est_cand.shape[-1]
    max_picks = C if max_picks is None else min(max_picks, C)
    min_picks = min(min_picks, max_picks)
    top = torch.maximum(est_fixed.amax(-1), est_cand.amax(-1) if C else est_fixed.amax(-1)).double()
    wf = torch.exp(est_fixed.double() - top[..., None]).sum(-1)
    wc = torch.exp(est_cand.double() - top[..., None])  # [..., C]
    total = wf + wc.sum(-1)
    before = wf[..., None] + wc.cumsum(-1) - wc  # mass held before candidate i is added
    # The loop adds candidate k while k < min or have < P * total; have only grows.
    short = (before < P * total[..., None]).sum(-1)
    return short.clamp(min=min_picks, max=max_picks)


def mass_select(P, bound, keys, fixed, present, scale, min_picks=0, max_picks=None):
    """stride's topk:mass=P for one query per row: bound [..., Np] the Quest
    bound of each page (max over the kv head's query heads), keys [..., Np] the
    keys of each page the query may see, fixed [..., Np] sinks and local window,
    present [..., Np]. A page's estimated log-mass is scale * bound + log(keys);
    candidates are ranked by bound (ties: lower page first). Returns (selected
    [..., Np] bool, picks [...])."""
    import torch
    est = scale * bound.float() + keys.float().clamp(min=1e-30).log()
    est = est.masked_fill(~present | (keys <= 0), float("-inf"))
    cand = present & ~fixed
    # Rank candidates best first; non-candidates sort last. Stable sort on the
    # negated bound keeps lower pages first among ties, as rank_key does.
    key = (-bound.float()).masked_fill(~cand, float("inf"))
    order = torch.sort(key, dim=-1, stable=True).indices
    n_cand = int(cand.sum(-1).max().item()) if cand.numel() else 0
    est_c = est.gather(-1, order)[..., :n_cand]
    valid_c = cand.gather(-1, order)[..., :n_cand]
    est_c = est_c.masked_fill(~valid_c, float("-inf"))
    est_f = est.masked_fill(~fixed | ~present, float("-inf"))
    picks = mass_picks(P, est_f, est_c, min_picks, max_picks)
    picks = torch.minimum(picks, cand.sum(-1))
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(order.shape[-1]).expand_as(order))
    sel = (fixed & present) | (cand & (rank < picks[..., None]))
    return sel, picks


def fixed_budget_keep(sparsity, n_pages, n_fixed):
    """topk_keep_count: pages read under topk:sparsity=R."""
    want = math.ceil((1.0 - sparsity) * n_pages - 1e-9)
    return min(n_pages, max(n_fixed, want))
