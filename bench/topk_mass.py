#!/usr/bin/env python3
"""Where top-k loses attention mass. Runs the model once in HF transformers
(the GGUF dequantized: an implementation we did not write), captures every
layer's queries and keys after RoPE, and for sampled query positions measures
the share of each query head's softmax mass that lands in the pages a
selection rule reads, at a fixed budget (sinks + local page + picks, as
`topk:sparsity=R` reads them). Rules:

  oracle    the pages with the most true mass (the ceiling at this budget)
  quest     Quest's upper bound from per-channel min/max of the page (stride today)
  quest16/8 the same bound over 16-/8-token sub-blocks, the page's score the best sub-block
  centroid  q . mean(k) of the page
  maxexact  the exact best q . k in the page (a perfect upper bound)

It also reports, per layer, how many pages the oracle needs to reach 90% and
95% of the mass: how sparse each layer really is, and what stride's adaptive
rule `mass:P` (topk:mass=P) reads and keeps. Only layers without a native
sliding window are analysed (every layer of SmolLM2, the global ones of
Gemma-3). Writes JSON and a PNG.

    ~/.cache/stride/venv/bin/python bench/topk_mass.py --length 4096
    ~/.cache/stride/venv/bin/python bench/topk_mass.py --threads 1 --sparsity 0.8,0.9 \
        --model models/gemma-3-270m-q4_k_m.gguf --out bench/out/topk_mass_gemma3_4k
"""
import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topk_rules import attention_module, load, mass_select  # noqa: E402


def capture_qk(model, ids):
    """Runs ids and returns per layer (q [H, T, d], k [Hkv, T, d], scaling)."""
    import torch
    mod = attention_module(model)
    captured = []
    orig = mod.apply_rotary_pos_emb

    def hook(q, k, *args, **kw):
        qo, ko = orig(q, k, *args, **kw)
        captured.append((qo[0].detach().clone(), ko[0].detach().clone()))
        return qo, ko

    mod.apply_rotary_pos_emb = hook
    try:
        with torch.no_grad():
            model.model(torch.tensor([ids]), use_cache=False)  # q/k only: no LM head
    finally:
        mod.apply_rotary_pos_emb = orig
    layers = model.model.layers
    out = []
    for i, (q, k) in enumerate(captured):
        attn = layers[i].self_attn
        window = getattr(attn, "sliding_window", None)
        out.append((q, k, float(attn.scaling), window))
    return out


def page_geometry(t, page, n):
    """For a query at t over its n pages: keys per page [n] (the last one
    partial) and the pages always read [n] (the sink page and the local one)."""
    import torch
    keys = torch.full((n,), float(page))
    keys[n - 1] = t - (n - 1) * page + 1
    fixed = torch.zeros(n, dtype=torch.bool)
    fixed[0] = True
    fixed[max(0, t - page + 1) // page:n] = True
    return keys, fixed


def budget(n_pages, sparsity, n_fixed):
    want = math.ceil((1.0 - sparsity) * n_pages - 1e-9)
    return min(n_pages, max(n_fixed, want))


def analyse_layer(q, k, scaling, ts, page, sparsities, subblocks=(16, 8)):
    import torch
    H, T, d = q.shape
    Hkv = k.shape[0]
    g = H // Hkv
    P = (T + page - 1) // page
    kp = torch.zeros(Hkv, P * page, d)
    kp[:, :T] = k
    valid = torch.zeros(P * page, dtype=torch.bool)
    valid[:T] = True
    tq = torch.tensor(ts)
    qs = q[:, tq, :]  # [H, Q, d]
    s = torch.einsum("hqd,htd->hqt", qs, kp.repeat_interleave(g, 0)) * scaling  # [H, Q, Tp]
    pos = torch.arange(P * page)
    causal = pos[None, :] <= tq[:, None]  # [Q, Tp]
    s = s.masked_fill(~causal[None], float("-inf"))
    prob = torch.softmax(s, dim=-1)
    mass = prob.view(H, len(ts), P, page).sum(-1)  # [H, Q, P]
    gmass = mass.view(Hkv, g, len(ts), P)  # per query head of the group
    oracle_score = gmass.mean(1)  # [Hkv, Q, P]

    def summaries(block):
        nb = P * page // block
        kb = kp.view(Hkv, nb, block, d)
        vb = valid.view(nb, block)
        big = torch.tensor(1e30)
        mn = torch.where(vb[None, :, :, None], kb, big).amin(2)
        mx = torch.where(vb[None, :, :, None], kb, -big).amax(2)
        mn = torch.where(vb.any(1)[None, :, None], mn, torch.zeros(()))
        mx = torch.where(vb.any(1)[None, :, None], mx, torch.zeros(()))
        return mn, mx  # [Hkv, nb, d]

    def quest(block):
        mn, mx = summaries(block)
        mid, half = (mn + mx) / 2, (mx - mn) / 2
        qg = qs.view(Hkv, g, len(ts), d)
        b = torch.einsum("hgqd,hnd->hgqn", qg, mid) + torch.einsum("hgqd,hnd->hgqn", qg.abs(), half)
        b = b.amax(1)  # max over the group's heads: [Hkv, Q, nb]
        per = page // block
        return b.view(Hkv, len(ts), P, per).amax(-1)

    kmean = (kp.view(Hkv, P, page, d) * valid.view(1, P, page, 1)).sum(2) / valid.view(P, page).sum(1).clamp(min=1)[None, :, None]
    qg = qs.view(Hkv, g, len(ts), d)
    scores = {
        "oracle": oracle_score,
        "quest": quest(page),
        "centroid": torch.einsum("hgqd,hpd->hgqp", qg, kmean).amax(1),
        "maxexact": s.view(Hkv, g, len(ts), P, page).amax(-1).amax(1),
    }
    for b in subblocks:
        if page % b == 0 and b < page:
            scores[f"quest{b}"] = quest(b)
    mn, mx = summaries(page)
    mid, half = (mn + mx) / 2, (mx - mn) / 2
    # RoPE rotates channel pairs (i, i + d/2): per pair, |q_pair| * the
    # page's largest key-pair norm is a second valid bound; take the smaller.
    h2 = d // 2
    kpair = (kp[..., :h2] ** 2 + kp[..., h2:] ** 2).sqrt().view(Hkv, P, page, h2)
    rad = torch.where(valid.view(1, P, page, 1), kpair, torch.zeros(())).amax(2)  # [Hkv, P, h2]
    qpair = (qg[..., :h2] ** 2 + qg[..., h2:] ** 2).sqrt()  # [Hkv, g, Q, h2]
    boxterm = torch.maximum(qg[:, :, :, None, :] * mn[:, None, None], qg[:, :, :, None, :] * mx[:, None, None])
    boxpair = boxterm[..., :h2] + boxterm[..., h2:]  # [Hkv, g, Q, P, h2]
    rot = torch.minimum(boxpair, qpair[:, :, :, None, :] * rad[:, None, None])
    scores["questrot"] = rot.sum(-1).amax(1)
    # Expected best of ~32 Gaussian scores: mean + 2 sd, sd from per-channel variance.
    kv3 = kp.view(Hkv, P, page, d)
    vm = valid.view(1, P, page, 1)
    cnt = vm.sum(2).clamp(min=1)
    mu = (kv3 * vm).sum(2) / cnt
    var = ((kv3 - mu[:, :, None]) ** 2 * vm).sum(2) / cnt
    gsd = torch.einsum("hgqd,hpd->hgqp", qg * qg, var).clamp(min=0).sqrt()
    scores["gauss2"] = (torch.einsum("hgqd,hpd->hgqp", qg, mu) + 2.0 * gsd).amax(1)
    scores["quest_a0.5"] = (torch.einsum("hgqd,hnd->hgqn", qg, mid)
                            + 0.5 * torch.einsum("hgqd,hnd->hgqn", qg.abs(), half)).amax(1)

    qpage = tq // page  # the page holding the query
    res = {name: {} for name in scores}
    for sp in sparsities:
        kept = {name: [] for name in scores}
        for j, t in enumerate(ts):
            n = int(qpage[j]) + 1  # pages present for this query
            _, fixed = page_geometry(t, page, n)
            keep = budget(n, sp, int(fixed.sum()))
            extra = keep - int(fixed.sum())
            cand = (~fixed).nonzero().flatten()
            for name, sc in scores.items():
                sel = fixed.clone()
                if extra > 0 and len(cand):
                    picks = sc[:, j, cand].topk(min(extra, len(cand)), dim=-1).indices  # [Hkv, extra]
                    m = sel[None].repeat(Hkv, 1)
                    m.scatter_(1, cand[picks], True)
                else:
                    m = sel[None].repeat(Hkv, 1)
                got = (gmass[:, :, j, :n] * m[:, None, :].float()).sum(-1)  # [Hkv, g]
                kept[name].append(got.mean().item())
        for name in scores:
            res[name][str(sp)] = sum(kept[name]) / len(kept[name])
    # Top-p: per (query, kv head) the fewest pages whose estimated mass
    # reaches P, the estimate a softmax of scale * score weighted by the
    # page's key count (fixed pages included).
    topp = {}
    for name in ("quest", "questrot", "gauss2"):
        if name not in scores:
            continue
        for P in (0.9, 0.95):
            reads, kept = [], []
            for j, t in enumerate(ts):
                n = int(qpage[j]) + 1
                cnt, fixed = page_geometry(t, page, n)
                est = scores[name][:, j, :n] * scaling + cnt.log()[None]  # [Hkv, n]
                w = torch.softmax(est, dim=-1)
                wf = w.masked_fill(fixed[None], 2.0)  # fixed pages first
                order = wf.sort(dim=-1, descending=True)
                cum = w.gather(1, order.indices).cumsum(-1)
                k = ((cum < P).sum(-1) + 1).clamp(max=n)  # [Hkv]
                k = torch.maximum(k, fixed.sum().expand_as(k))
                m = torch.zeros(Hkv, n, dtype=torch.bool)
                for h in range(Hkv):
                    m[h, order.indices[h, : int(k[h])]] = True
                reads.append(m.float().mean().item())
                kept.append((gmass[:, :, j, :n] * m[:, None, :].float()).sum(-1).mean().item())
            topp[f"{name}@{P}"] = {"read": sum(reads) / len(reads), "kept": sum(kept) / len(kept)}
    res["topp"] = topp
    # stride's mass=P (topk_rules.mass_select, as topk_selector.cpp): per query
    # and kv head, from the Quest bound.
    mass_rule = {}
    for Pm in (0.9, 0.95):
        reads, kept = [], []
        for j, t in enumerate(ts):
            n = int(qpage[j]) + 1
            keys, fixed = page_geometry(t, page, n)
            m, _ = mass_select(Pm, scores["quest"][:, j, :n], keys.expand(Hkv, n), fixed.expand(Hkv, n),
                               torch.ones(Hkv, n, dtype=torch.bool), scaling)
            reads.append(m.float().mean().item())
            kept.append((gmass[:, :, j, :n] * m[:, None, :].float()).sum(-1).mean().item())
        mass_rule[str(Pm)] = {"read": sum(reads) / len(reads), "kept": sum(kept) / len(kept)}
    res["mass"] = mass_rule
    # Pages the oracle needs for 90% / 95% of each head's mass (mean over queries and heads).
    need = {}
    for target in (0.9, 0.95):
        cnt = []
        for j, t in enumerate(ts):
            n = int(qpage[j]) + 1
            m = mass[:, j, :n].sort(dim=-1, descending=True).values.cumsum(-1)
            cnt.append(((m < target).sum(-1) + 1).float().mean().item() / n)
        need[str(target)] = sum(cnt) / len(cnt)
    return res, need


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--text", default=os.path.expanduser("~/.cache/stride/debian-reference.txt"))
    ap.add_argument("--length", type=int, default=4096)
    ap.add_argument("--page", type=int, default=32)
    ap.add_argument("--queries", type=int, default=48, help="sampled query positions in the second half")
    ap.add_argument("--sparsity", default="0.75,0.9,0.95")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "topk_mass"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    tok, model = load(a.model, a.threads)
    text = open(a.text, encoding="utf-8", errors="replace").read()[: a.length * 8]
    ids = tok(text)["input_ids"][: a.length]
    T = len(ids)
    layers = capture_qk(model, ids)
    ts = sorted({int(T // 2 + (T // 2 - 1) * i / max(1, a.queries - 1)) for i in range(a.queries)})
    sparsities = [float(x) for x in a.sparsity.split(",")]
    report = {"model": a.model, "length": T, "page": a.page, "queries": len(ts), "layers": []}
    for i, (q, k, scaling, window) in enumerate(layers):
        if window:  # a native sliding-window layer: top-k applies to the global ones
            continue
        res, need = analyse_layer(q, k, scaling, ts, a.page, sparsities)
        report["layers"].append({"layer": i, "captured": res, "oracle_pages_for": need})
        line = " ".join(f"{n}={v['0.9']:.3f}" for n, v in res.items() if "0.9" in v and n != "mass")
        print(f"layer {i:2d}: mass kept at 0.9: {line}  oracle pages for 90%: {need['0.9']:.3f} "
              f"95%: {need['0.95']:.3f}", flush=True)
        for sp in sparsities:
            print(f"  sparsity {sp}: " + " ".join(f"{n}={res[n][str(sp)]:.3f}" for n in ("oracle", "quest")), flush=True)
        for Pm, v in res["mass"].items():
            print(f"  mass:{Pm}: read {v['read']:.3f} kept {v['kept']:.4f}", flush=True)
    names = [n for n in report["layers"][0]["captured"].keys() if n not in ("topp", "mass")]
    tp = report["layers"][0]["captured"]["topp"].keys()
    report["mean_topp"] = {k: {m: sum(l["captured"]["topp"][k][m] for l in report["layers"]) / len(report["layers"])
                               for m in ("read", "kept")} for k in tp}
    for k, v in report["mean_topp"].items():
        print(f"top-p {k:16s} read {v['read']:.3f} kept {v['kept']:.4f}")
    report["mean_mass"] = {Pm: {m: sum(l["captured"]["mass"][Pm][m] for l in report["layers"]) / len(report["layers"])
                                for m in ("read", "kept")} for Pm in report["layers"][0]["captured"]["mass"]}
    for Pm, v in report["mean_mass"].items():
        print(f"mass:{Pm:12s} read {v['read']:.3f} kept {v['kept']:.4f}")
    report["mean"] = {n: {str(sp): sum(l["captured"][n][str(sp)] for l in report["layers"]) / len(report["layers"])
                          for sp in sparsities} for n in names}
    for n in names:
        print(f"mean {n:9s} " + " ".join(f"{sp}:{report['mean'][n][str(sp)]:.4f}" for sp in sparsities))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.5))
    xs = [l["layer"] for l in report["layers"]]
    for n in names:
        ax[0].plot(xs, [l["captured"][n]["0.9"] for l in report["layers"]], marker=".", label=n)
    ax[0].set_xlabel("layer"); ax[0].set_ylabel("softmax mass read at sparsity 0.9"); ax[0].legend()
    ax[0].set_title(f"{os.path.basename(a.model)}, {T} tokens, {a.page}-token pages")
    ax[1].plot(xs, [l["oracle_pages_for"]["0.9"] for l in report["layers"]], marker=".", label="90% of mass")
    ax[1].plot(xs, [l["oracle_pages_for"]["0.95"] for l in report["layers"]], marker=".", label="95% of mass")
    ax[1].set_xlabel("layer"); ax[1].set_ylabel("share of pages the oracle needs"); ax[1].legend()
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)
    print(f"wrote {a.out}.json and .png", file=sys.stderr)


if __name__ == "__main__":
    main()
