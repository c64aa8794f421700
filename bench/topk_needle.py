#!/usr/bin/env python3
"""What top-k selection does with a needle. Builds one needle-in-a-haystack
prompt like `stride eval`'s niah_single ("One of the special magic numbers
for {key} is: {7 digits}." at a depth of the Debian text, then the question
and the answer prefix, in Gemma's chat template) or its passkey (--task), runs it in HF transformers
(the GGUF dequantized) and, at the last prompt position (the query that
produces the first answer token), reports per global layer and kv head:

  - the true softmax mass on the needle's page(s) (mean over the kv head's
    query heads) and their rank by true mass,
  - their rank among the candidates under the Quest bound,
  - whether quest:R (topk:sparsity=R) and mass:P (topk:mass=P) read them,
  - how many pages mass:P reads and what it believes: its estimated share of
    the fixed pages (sink + local window) and of the needle page against the
    true shares, and the oracle's pages for P of the mass.

Then the answer is teacher-forced under dense, quest:R and mass:P on every
global layer (sliding-window layers as the model runs them): whether each
answer token is still the argmax, and its log-probability.

    ~/.cache/stride/venv/bin/python bench/topk_needle.py --threads 1 \\
        --model models/gemma-3-270m-q4_k_m.gguf --length 4096 --depth 0.5 \\
        --out bench/out/topk_needle_gemma3_4k
"""
import argparse
import json
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topk_rules import attention_module, fixed_budget_keep, global_layers, load, logits_of, mass_select  # noqa: E402
from topk_sim import install_rule_attention, parse_rule  # noqa: E402

INTRO = ("Some special magic numbers are hidden within the following text. Make sure to memorize it. "
         "I will quiz you about the numbers afterwards.\n")


def chat_parts(chat):
    """The text around the task: Gemma's user turn and the model's turn, or
    completion style (task, a space, the answer prefix) as `stride eval`
    renders without a chat template."""
    if chat:
        return "<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n"
    return "", " "


def build_prompt(tok, text, length, depth, seed, chat=True, key=None):
    """(prompt text, needle char span, value char span, answer text). The
    haystack starts at a seeded sentence; the needle sits at the sentence
    boundary nearest `depth` of the haystack's tokens."""
    rng = random.Random(seed)
    value = "".join(rng.choice("0123456789") for _ in range(7))
    key = rng.choice(["tranquil-harbor", "crimson-lantern", "hollow-meadow", "silent-orchard", "amber-falcon"])
    needle = f"One of the special magic numbers for {key} is: {value}."
    question = f"What is the special magic number for {key} mentioned in the provided text?"
    prefix = f"The special magic number for {key} mentioned in the provided text is"
    bounds = [m.end() for m in re.finditer(r"(?<=[.!?])\s+|\n", text)]
    start = bounds[rng.randrange(len(bounds) // 2)]
    hay = text[start:start + length * 8]
    enc = tok(hay, add_special_tokens=False, return_offsets_mapping=True)
    offs = enc["offset_mapping"]
    pre, post = chat_parts(chat)
    head = pre + INTRO
    tail = "\n" + question + post + prefix
    fixed = len(tok(head + needle + tail, add_special_tokens=False)["input_ids"]) + 1  # + <bos>
    n_hay = length - fixed
    hb = [b - start for b in bounds if start < b < start + len(hay)]

    def nearest(tokens):
        c = offs[min(tokens, len(offs) - 1)][0]
        return min(hb, key=lambda b: abs(b - c))

    cut = nearest(n_hay)
    at = nearest(int(depth * n_hay))
    sep = "" if hay[at - 1] == "\n" else " "
    body = hay[:at] + needle + ("\n" if sep == "" else " ") + hay[at:cut].rstrip()
    prompt = head + body + tail
    n0 = len(head) + at
    v0 = n0 + needle.index(value)
    return prompt, (n0, n0 + len(needle)), [(v0, v0 + len(value))], " " + value + "."


PK_INTRO = ("There is an important piece of information hidden inside a lot of irrelevant text. "
            "Find it and memorize it. I will quiz you about the important information there.\n")
PK_FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "


def build_passkey(tok, length, depth, seed, chat=True, key=None):
    """eval/passkey.cpp's prompt (a 5-digit key in repeated filler); with the
    eval's key, depth and length and chat off it is the eval's prompt."""
    key = str(key or random.Random(seed).randrange(10000, 100000))
    needle = f"The pass key is {key}. Remember it. {key} is the pass key. "
    pre, post = chat_parts(chat)
    head, tail = pre + PK_INTRO, "\nWhat is the pass key?" + post + "The pass key is"
    unit = len(tok(PK_FILLER, add_special_tokens=False)["input_ids"])
    fixed = len(tok(head + needle + tail, add_special_tokens=False)["input_ids"]) + 1
    n_units = max(1, (length - fixed) // unit)
    before = min(n_units, max(0, int(depth * n_units + 0.5)))
    prompt = head + PK_FILLER * before + needle + PK_FILLER * (n_units - before) + tail
    n0 = len(head) + len(PK_FILLER) * before
    v = [n0 + needle.index(key), n0 + needle.rindex(key)]
    return prompt, (n0, n0 + len(needle)), [(x, x + len(key)) for x in v], " " + key + "."


def tokens_in(offs, *spans):
    return sorted({i for span in spans for i in tokens_in1(offs, span)})


def tokens_in1(offs, span):
    return [i for i, (a, b) in enumerate(offs) if b > span[0] and a < span[1]]


def analyse(q, k, scaling, t, page, needle_pages, value_pages, sparsity, P):
    """One layer at query t. q [H, T, d], k [Hkv, T, d] after RoPE."""
    import torch
    H, _, d = q.shape
    Hkv = k.shape[0]
    g = H // Hkv
    n = t // page + 1
    kk = torch.nn.functional.pad(k[:, : t + 1], (0, 0, 0, n * page - t - 1))  # [Hkv, n*page, d]
    valid = torch.arange(n * page) <= t
    qt = q[:, t]  # [H, d]
    s = torch.einsum("hd,htd->ht", qt, kk.repeat_interleave(g, 0)) * scaling
    prob = torch.softmax(s.masked_fill(~valid[None], float("-inf")), -1)
    mass = prob.view(H, n, page).sum(-1).view(Hkv, g, n)  # [Hkv, g, n]
    gm = mass.mean(1)  # [Hkv, n] the group's mean: what one kv head's pick serves
    kp = kk.view(Hkv, n, page, d)
    vm = valid.view(1, n, page, 1)
    mn = torch.where(vm, kp, torch.tensor(1e30)).amin(2)
    mx = torch.where(vm, kp, torch.tensor(-1e30)).amax(2)
    qg = qt.view(Hkv, g, d)
    bound = torch.maximum(qg[:, :, None] * mn[:, None], qg[:, :, None] * mx[:, None]).sum(-1).amax(1)  # [Hkv, n]
    local_from = max(0, t - page + 1) // page
    fixed = torch.zeros(n, dtype=torch.bool)
    fixed[0] = True
    fixed[local_from:] = True
    keys = torch.full((n,), float(page))
    keys[n - 1] = t - (n - 1) * page + 1
    sel_m, picks = mass_select(P, bound, keys.expand(Hkv, n), fixed.expand(Hkv, n),
                               torch.ones(Hkv, n, dtype=torch.bool), scaling)
    est = torch.softmax(scaling * bound + keys.log()[None], -1)  # mass=P's estimated shares
    keep = fixed_budget_keep(sparsity, n, int(fixed.sum()))
    extra = keep - int(fixed.sum())
    out = []
    for h in range(Hkv):
        cand = (~fixed).nonzero().flatten()
        order = cand[torch.sort(-bound[h, cand], stable=True).indices]  # candidates, best bound first
        qrank = {int(p): i + 1 for i, p in enumerate(order)}
        trank = {int(p): i + 1 for i, p in enumerate(torch.sort(-gm[h], stable=True).indices)}
        cum = gm[h].sort(descending=True).values.cumsum(0)
        pages = []
        for p in sorted(set(needle_pages)):
            pages.append({
                "page": p, "holds_value": p in value_pages,
                "true_mass": gm[h, p].item(), "true_mass_max_head": mass[h, :, p].max().item(),
                "true_rank": trank[p], "est_share": est[h, p].item(),
                "quest_rank": qrank.get(p), "fixed": bool(fixed[p]),
                "quest_picks": bool(fixed[p]) or qrank.get(p, 10**9) <= extra,
                "mass_picks": bool(sel_m[h, p]),
            })
        out.append({
            "kv_head": h, "pages": n, "needle": pages,
            "needle_true_mass": sum(gm[h, p].item() for p in set(needle_pages)),
            "fixed_true_share": gm[h, fixed].sum().item(), "fixed_est_share": est[h, fixed].sum().item(),
            "sink_true_share": gm[h, 0].item(), "sink_est_share": est[h, 0].item(),
            "quest_reads": keep, "quest_kept": gm[h, fixed].sum().item() + gm[h, order[:extra]].sum().item(),
            "mass_reads": int(sel_m[h].sum()), "mass_picks": int(picks[h]), "mass_kept": gm[h, sel_m[h]].sum().item(),
            "oracle_pages_for_P": int((cum < P).sum()) + 1,
            "bound_spread": (bound[h, cand].max() - bound[h, cand].median()).item() * scaling,
        })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--text", default=os.path.expanduser("~/.cache/stride/debian-reference.txt"))
    ap.add_argument("--length", type=int, default=4096)
    ap.add_argument("--task", choices=("niah_single", "passkey"), default="niah_single")
    ap.add_argument("--depth", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--key", type=int, default=None, help="passkey: the key (default: from the seed)")
    ap.add_argument("--chat", choices=("on", "off"), default="on")
    ap.add_argument("--page", type=int, default=32)
    ap.add_argument("--sparsity", type=float, default=0.9)
    ap.add_argument("--mass", type=float, default=0.95)
    ap.add_argument("--rules", default="", help="more rules for the answer (topk_sim.py's syntax)")
    ap.add_argument("--only-rules", action="store_true", help="score only dense and --rules")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "topk_needle"))
    a = ap.parse_args()
    import torch
    tok, model = load(a.model, a.threads)
    text = open(a.text, encoding="utf-8", errors="replace").read()
    build = build_passkey if a.task == "passkey" else lambda *x, **kw: build_prompt(tok, text, *x[1:], **kw)
    prompt, nspan, vspans, answer = build(tok, a.length, a.depth, a.seed, chat=a.chat == "on", key=a.key)
    enc = tok(prompt, add_special_tokens=False, return_offsets_mapping=True)
    bos = tok.bos_token_id
    ids = [bos] + enc["input_ids"]
    offs = [(0, 0)] + enc["offset_mapping"]
    ans = tok(answer, add_special_tokens=False)["input_ids"]
    T = len(ids)
    ntok, vtok = tokens_in(offs, nspan), tokens_in(offs, *vspans)
    needle_pages = sorted({i // a.page for i in ntok})
    value_pages = sorted({i // a.page for i in vtok})
    print(f"prompt {T} tokens, needle tokens {ntok[0]}-{ntok[-1]} (pages {needle_pages}, value on {value_pages}), "
          f"answer {answer!r} = {ans}; starts {tok.convert_ids_to_tokens(ids[:4])}", flush=True)
    state = {"rule": None, "stats": None}
    install_rule_attention(model, state)
    mod = attention_module(model)
    captured, orig = [], mod.apply_rotary_pos_emb

    def hook(q, k, *args, **kw):
        qo, ko = orig(q, k, *args, **kw)
        captured.append((qo[0].detach().clone(), ko[0].detach().clone()))
        return qo, ko

    full = torch.tensor([ids + ans])
    runs = {}
    base = ["dense", f"quest:{a.sparsity}", f"mass:{a.mass}"] if not a.only_rules else ["dense"]
    for rt in base + [r for r in a.rules.split(",") if r]:
        state["rule"] = None if rt == "dense" else parse_rule(rt)
        if state["rule"] and state["rule"]["lastdense"]:
            state["rule"]["dense_from"] = T - 1  # the first answer token's query and after
        state["stats"] = {"reads": 0, "present": 0, "layers": {}}
        if rt == "dense":
            mod.apply_rotary_pos_emb = hook
        try:
            with torch.no_grad():
                h = model.model(full, use_cache=False).last_hidden_state[0, T - 1: T - 1 + len(ans)]
                lp = torch.log_softmax(logits_of(model, h).float(), -1)
        finally:
            mod.apply_rotary_pos_emb = orig
        tgt = torch.tensor(ans)
        runs[rt] = {"argmax_ok": (lp.argmax(-1) == tgt).tolist(),
                    "logprob": lp[torch.arange(len(ans)), tgt].tolist(),
                    "argmax": tok.convert_ids_to_tokens(lp.argmax(-1).tolist()),
                    "read": state["stats"]["reads"] / max(1, state["stats"]["present"]),
                    "read_per_layer": {str(i): rd / max(1, pr) for i, (rd, pr) in sorted(state["stats"]["layers"].items())}}
        r = runs[rt]
        print(f"{rt:11s} answer argmax {''.join('1' if x else '0' for x in r['argmax_ok'])} "
              f"logprob {sum(r['logprob']):.2f} got {''.join(r['argmax'])!r} read {r['read']:.3f}", flush=True)
    state["rule"] = None
    report = {"model": a.model, "task": a.task, "chat": a.chat, "length": T, "depth": a.depth, "seed": a.seed, "page": a.page,
              "needle_tokens": [ntok[0], ntok[-1]], "needle_pages": needle_pages, "value_pages": value_pages,
              "answer": answer, "runs": runs, "layers": []}
    for i in global_layers(model):
        q, k = captured[i]
        attn = model.model.layers[i].self_attn
        res = analyse(q, k, float(attn.scaling), T - 1, a.page, needle_pages, value_pages, a.sparsity, a.mass)
        report["layers"].append({"layer": i, "heads": res})
        for r in res:
            print(f"layer {i:2d} kv {r['kv_head']}: needle mass {r['needle_true_mass']:.3f}; fixed true "
                  f"{r['fixed_true_share']:.3f} est {r['fixed_est_share']:.3f} (sink {r['sink_true_share']:.3f} / "
                  f"{r['sink_est_share']:.3f}); quest:{a.sparsity} reads {r['quest_reads']} kept {r['quest_kept']:.3f}; "
                  f"mass:{a.mass} reads {r['mass_reads']}/{r['pages']} kept {r['mass_kept']:.3f}; "
                  f"oracle for {a.mass}: {r['oracle_pages_for_P']}", flush=True)
            for p in r["needle"]:
                print(f"    page {p['page']}{'*' if p['holds_value'] else ' '} true {p['true_mass']:.3f} "
                      f"(max head {p['true_mass_max_head']:.3f}, rank {p['true_rank']}) est {p['est_share']:.4f} "
                      f"quest rank {p['quest_rank']} quest picks {p['quest_picks']} mass picks {p['mass_picks']}",
                      flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {a.out}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
