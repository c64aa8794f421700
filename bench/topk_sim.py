#!/usr/bin/env python3
"""Top-k selection rules simulated end to end in HF transformers (the GGUF
dequantized): every non-windowed layer's attention (every layer of SmolLM2,
the global ones of Gemma-3; sliding-window layers run as the model runs
them) is replaced by a rule
that reads a subset of 32-token pages per (query, kv head), and the final
logits are compared with the unmodified model over the whole text (top-1
agreement, mean KL(dense || rule)), with the share of pages read. This is
where a rule is chosen before it is written in C++; `stride validate`
measures what was written.

Rules (comma list --rules):
  quest:R            Quest bound, fixed budget, sparsity R (stride's topk:sparsity=R)
  oracle:R           the pages with the most true mass, fixed budget (the ceiling)
  topp:P             Quest bound, the fewest pages whose estimated mass reaches P
  mass:P             stride's topk:mass=P (topk_rules.mass_select, as topk_selector.cpp)
  ...+minN           mass:P picks at least N tokens besides sinks and window (topk:mass=P,min=N)
  ...+lastdense      queries from rule["dense_from"] on read every page (topk_needle.py sets it)
  ...+tail           unread pages join the softmax through their mean key/value
                     (log-mass log n + s q.mu + s^2/2 q^2.var): the tail estimate

    ~/.cache/stride/venv/bin/python bench/topk_sim.py --length 4096 --rules quest:0.9,quest:0.9+tail
    ~/.cache/stride/venv/bin/python bench/topk_sim.py --threads 1 --model models/gemma-3-270m-q4_k_m.gguf \
        --rules quest:0.9,oracle:0.9,mass:0.95 --out bench/out/topk_sim_gemma3_4k

"read" is the share of present pages read, over the rule's layers only.
"""
import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = int(os.environ.get("STRIDE_SIM_PAGE", "32"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topk_rules import load, logits_of, mass_select  # noqa: E402


def parse_rule(text):
    base, _, extra = text.partition("+")
    kind, _, val = base.partition(":")
    extras = extra.split("+")
    mins = [int(e[3:]) for e in extras if e.startswith("min") and e[3:].isdigit()]
    return {"name": text, "kind": kind, "value": float(val), "tail": "tail" in extras,
            "tail1": "tail1" in extras, "min_tokens": mins[0] if mins else 0,
            # Queries at or after rule["dense_from"] (set by the caller) read every page.
            "lastdense": "lastdense" in extras, "dense_from": None,
            # mass:P with the sink and window pages' mass exact (their keys are read anyway).
            "exactfixed": "exactfixed" in extras}


def page_stats(k, v, T):
    """Per page and kv head: min, max, mean, var of keys, mean of values. k, v: [Hkv, T, d]."""
    import torch
    Hkv, _, d = k.shape
    P = (T + PAGE - 1) // PAGE
    pad = P * PAGE - T
    kp = torch.nn.functional.pad(k, (0, 0, 0, pad)).view(Hkv, P, PAGE, d)
    vp = torch.nn.functional.pad(v, (0, 0, 0, pad)).view(Hkv, P, PAGE, d)
    valid = torch.zeros(P * PAGE, dtype=torch.bool)
    valid[:T] = True
    vm = valid.view(1, P, PAGE, 1)
    big = 1e30
    mn = torch.where(vm, kp, big).amin(2)
    mx = torch.where(vm, kp, -big).amax(2)
    cnt = vm.sum(2).clamp(min=1)  # [1, P, 1]
    mu = (kp * vm).sum(2) / cnt
    var = ((kp - mu[:, :, None]) ** 2 * vm).sum(2) / cnt
    nu = (vp * vm).sum(2) / cnt
    return mn, mx, mu, var, nu


def install_rule_attention(model, state):
    """Routes attention through `state["rule"]` on the layers without a native
    window; sliding-window layers, and every layer while the rule is None, run
    SDPA with the model's own masks."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    sdpa = ALL_ATTENTION_FUNCTIONS["sdpa"]

    def attn(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        if state["rule"] is None or getattr(module, "sliding_window", None):
            return sdpa(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kw)
        before = (state["stats"]["reads"], state["stats"]["present"])
        o = rule_attention(state["rule"], query[0], key[0], value[0], scaling, state["stats"])
        lay = state["stats"].setdefault("layers", {}).setdefault(getattr(module, "layer_idx", -1), [0, 0])
        lay[0] += state["stats"]["reads"] - before[0]
        lay[1] += state["stats"]["present"] - before[1]
        return o[None], None

    ALL_ATTENTION_FUNCTIONS["stride_rule"] = attn
    # Without a mask function of its own an unknown implementation gets no
    # mask at all, and SDPA would run the sliding-window layers fully causal.
    ALL_MASK_ATTENTION_FUNCTIONS.register("stride_rule", ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    model.config._attn_implementation = "stride_rule"
    for layer in model.model.layers:
        layer.self_attn.config._attn_implementation = "stride_rule"


def rule_attention(rule, q, k, v, scaling, stats_out):
    """q [H, T, d], k/v [Hkv, T, d] -> [T, H, d]."""
    import torch
    H, T, d = q.shape
    Hkv = k.shape[0]
    g = H // Hkv
    P = (T + PAGE - 1) // PAGE
    mn, mx, mu, var, nu = page_stats(k, v, T)
    mid, half = (mn + mx) / 2, (mx - mn) / 2
    out = torch.empty(T, H, d)
    kk = k.repeat_interleave(g, 0)
    vv = v.repeat_interleave(g, 0)
    reads, present = 0, 0
    for t0 in range(0, T, 256):
        t1 = min(T, t0 + 256)
        tq = torch.arange(t0, t1)
        qs = q[:, t0:t1]  # [H, n, d]
        n = t1 - t0
        s = torch.einsum("hnd,htd->hnt", qs, kk) * scaling  # [H, n, T]
        causal = torch.arange(T)[None, :] <= tq[:, None]  # [n, T]
        qpage = tq // PAGE
        pidx = torch.arange(P)
        pres = pidx[None, :] <= qpage[:, None]  # [n, P] pages present
        local_from = (tq - PAGE + 1).clamp(min=0) // PAGE
        fixed = (pidx[None, :] == 0) | (pidx[None, :] >= local_from[:, None])
        fixed &= pres
        qg = qs.view(Hkv, g, n, d)
        bound = (torch.einsum("hgnd,hpd->hgnp", qg, mid) + torch.einsum("hgnd,hpd->hgnp", qg.abs(), half)).amax(1)
        bound = bound.masked_fill(~pres[None], float("-inf"))  # [Hkv, n, P]
        sel = fixed[None].repeat(Hkv, 1, 1)
        n_pres = pres.sum(-1)  # [n]
        if rule["kind"] == "oracle":
            # The ceiling: pages by their true mass (mean over the group's heads).
            pm = torch.softmax(s.masked_fill(~causal[None], float("-inf")), -1)
            pm = torch.nn.functional.pad(pm, (0, P * PAGE - T)).view(H, n, P, PAGE).sum(-1)
            bound = pm.view(Hkv, g, n, P).mean(1).masked_fill(~pres[None], float("-inf"))
        if rule["kind"] in ("quest", "oracle"):
            keep = torch.ceil((1 - rule["value"]) * n_pres.double() - 1e-9).long()
            keep = torch.maximum(keep, fixed.sum(-1))
            extra = keep - fixed.sum(-1)  # [n]
            sc = bound.masked_fill(fixed[None], float("-inf"))
            order = sc.argsort(dim=-1, descending=True)
            rank = torch.empty_like(order)
            rank.scatter_(-1, order, torch.arange(P).expand_as(order))
            sel |= (rank < extra[None, :, None]) & pres[None]
        elif rule["kind"] == "topp":
            cntp = torch.full((n, P), float(PAGE))
            cntp[torch.arange(n), qpage] = (tq - qpage * PAGE + 1).float()
            est = bound * scaling + cntp.log()[None]
            w = torch.softmax(est, dim=-1)
            wf = w.masked_fill(fixed[None], 2.0)
            order = wf.argsort(dim=-1, descending=True)
            cum = w.gather(-1, order).cumsum(-1)
            before = cum - w.gather(-1, order)
            take = (before < rule["value"])
            m = torch.zeros_like(sel)
            m.scatter_(-1, order, take)
            sel |= m & pres[None]
        elif rule["kind"] == "mass":
            keys = torch.full((n, P), float(PAGE))
            keys[torch.arange(n), qpage] = (tq - qpage * PAGE + 1).float()
            keys = keys.masked_fill(~pres, 0.0)
            if rule["exactfixed"]:
                # A fixed page's bound replaced by the one whose estimate is its exact
                # log-sum-exp (max over the group's heads); candidates keep Quest's.
                lse = torch.nn.functional.pad(s.masked_fill(~causal[None], float("-inf")), (0, P * PAGE - T),
                                              value=float("-inf")).view(H, n, P, PAGE).logsumexp(-1)
                lse = lse.view(Hkv, g, n, P).amax(1)
                exact = (lse - keys.clamp(min=1e-30).log()[None]) / scaling
                bound = torch.where(fixed[None] & torch.isfinite(exact), exact, bound)
            m, _ = mass_select(rule["value"], bound, keys[None].expand(Hkv, n, P), fixed[None].expand(Hkv, n, P),
                               pres[None].expand(Hkv, n, P), scaling, -(-rule["min_tokens"] // PAGE))
            sel |= m
        if rule.get("dense_from") is not None:
            sel |= pres[None] & (tq >= rule["dense_from"])[None, :, None]
        reads += sel.sum().item() / Hkv
        present += n_pres.sum().item()
        keymask = sel.repeat_interleave(PAGE, -1)[:, :, :T].repeat_interleave(g, 0) & causal[None]  # [H, n, T]
        s_sel = s.masked_fill(~keymask, float("-inf"))
        if rule["tail"] or rule["tail1"]:
            # Tail: every unread present page as one pseudo key with log-mass
            # log n + s q.mu (+ s^2/2 q^2.var) and value mean nu.
            qq = qs.view(Hkv, g, n, d)
            lz = torch.einsum("hgnd,hpd->hgnp", qq, mu) * scaling
            if rule["tail"]:
                lz = lz + 0.5 * scaling * scaling * torch.einsum("hgnd,hpd->hgnp", qq * qq, var)
            lz = lz + math.log(PAGE)
            unread = (~sel & pres[None])[:, None].expand(Hkv, g, n, P)
            lz = lz.masked_fill(~unread, float("-inf")).reshape(H, n, P)
            allz = torch.cat([s_sel, lz], dim=-1)
            p = torch.softmax(allz, dim=-1)
            o = torch.einsum("hnt,htd->hnd", p[:, :, :T], vv) + torch.einsum(
                "hnp,hpd->hnd", p[:, :, T:], nu.repeat_interleave(g, 0))
        else:
            p = torch.softmax(s_sel, dim=-1)
            o = torch.einsum("hnt,htd->hnd", p, vv)
        out[t0:t1] = o.permute(1, 0, 2)
    stats_out["reads"] += reads
    stats_out["present"] += present
    return out


def compare(model, ref_h, h, chunk=256):
    """Top-1 agreement and KL(dense || rule) per position from the final hidden
    states [T, hidden], the logits made a chunk at a time."""
    import torch
    top1, kl = [], []
    for c0 in range(0, ref_h.shape[0], chunk):
        ref = torch.log_softmax(logits_of(model, ref_h[c0:c0 + chunk]).float(), -1)
        lp = torch.log_softmax(logits_of(model, h[c0:c0 + chunk]).float(), -1)
        kl.append((ref.exp() * (ref - lp)).sum(-1))
        top1.append((ref.argmax(-1) == lp.argmax(-1)).float())
    return torch.cat(top1), torch.cat(kl)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--text", default=os.path.expanduser("~/.cache/stride/debian-reference.txt"))
    ap.add_argument("--length", type=int, default=4096)
    ap.add_argument("--rules", default="quest:0.9,topp:0.9,quest:0.9+tail,topp:0.9+tail")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "topk_sim"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    import torch
    tok, model = load(a.model, a.threads)
    text = open(a.text, encoding="utf-8", errors="replace").read()[: a.length * 8]
    ids = torch.tensor([tok(text)["input_ids"][: a.length]])
    T = ids.shape[1]
    state = {"rule": None, "stats": None}
    install_rule_attention(model, state)
    with torch.no_grad():
        ref_h = model.model(ids, use_cache=False).last_hidden_state[0]
    results = []
    for rt in a.rules.split(","):
        rule = parse_rule(rt)
        state["rule"], state["stats"] = rule, {"reads": 0, "present": 0, "layers": {}}
        with torch.no_grad():
            h = model.model(ids, use_cache=False).last_hidden_state[0]
            top1, kl = compare(model, ref_h, h)
        state["rule"] = None
        st = state["stats"]
        r = {"rule": rt, "length": T, "top1": top1.mean().item(), "kl": kl.mean().item(),
             "top1_second_half": top1[T // 2:].mean().item(), "kl_second_half": kl[T // 2:].mean().item(),
             "read": st["reads"] / max(1, st["present"]),
             "read_per_layer": {str(i): rd / max(1, pr) for i, (rd, pr) in sorted(st["layers"].items())}}
        results.append(r)
        per = " ".join(f"L{i}:{v:.3f}" for i, v in r["read_per_layer"].items()) if len(r["read_per_layer"]) <= 6 else ""
        print(f"{rt:24s} top1 {r['top1']:.4f} kl {r['kl']:.4f}  (2nd half: top1 {r['top1_second_half']:.4f} "
              f"kl {r['kl_second_half']:.4f})  read {r['read']:.3f} {per}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as fo:
        json.dump({"model": a.model, "length": T, "page": PAGE, "results": results}, fo, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        ax[0].scatter(r["read"], r["top1"], label=r["rule"])
        ax[1].scatter(r["read"], r["kl"], label=r["rule"])
    ax[0].set(xlabel="share of pages read", ylabel="top-1 agreement with dense")
    ax[1].set(xlabel="share of pages read", ylabel="mean KL(dense || rule)")
    ax[0].legend(fontsize=7)
    fig.suptitle(f"{os.path.basename(a.model)}, {T} tokens")
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)


if __name__ == "__main__":
    main()
