#!/usr/bin/env python3
"""Mixture-of-experts speed: a small MoE GGUF vs a dense model with the same active parameters.

Usage:
  ~/.cache/stride/venv/bin/python bench/moe.py [--stride build/stride] [--llama-bench PATH]
      [--threads 2] [--prompt 128] [--gen 64] [--reps 3] [--out bench/out/moe]

Models (random weights, made once under ~/.cache/stride/moe-bench, converted by llama.cpp's
convert_hf_to_gguf.py to Q8_0 through scripts/oracles/hf_to_gguf.py):
  moe    Mixtral shape: hidden 512, 8 layers, 8 experts of ff 1024, top-2 (GGUF arch llama)
  dense  Llama with the same attention and ff 2048 = 2 x 1024: the weights one MoE token reads
The MoE file holds 4x the dense model's FFN weights; a token reads the same number of
weights in both, so decode (bound by weight reads) should run at about the dense speed,
and prefill loses some to routing and to per-expert matmuls over fewer rows.

Each engine runs the same prompt (ids drawn from the 256-token byte vocabulary):
  stride:    `stride run --prompt-ids ... -n GEN --json` (prefill_tok_s, decode_tok_s)
  llama.cpp: `llama-bench -m F -p PROMPT -n GEN -t THREADS -fa 0 -r 1 -o json`, when it runs
             the file (its binary from --llama-bench, LLAMA_BENCH or ~/.cache/stride/llama-bench)
Medians of --reps runs, interleaved. Writes OUT.json and OUT.png (tok/s per engine and model,
and the MoE/dense ratio of each engine).
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "oracles"))
sys.path.insert(0, str(ROOT / "bench"))
import hf_to_gguf  # noqa: E402
from shapes import cpu_model, git_commit, log, run_measured  # noqa: E402

CACHE = Path(os.environ.get("STRIDE_CACHE", Path.home() / ".cache" / "stride"))
SHAPE = dict(vocab_size=256, hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
             num_key_value_heads=4, max_position_embeddings=4096, rms_norm_eps=1e-5,
             rope_theta=1000000.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
N_EXPERT, N_USED, EXPERT_FF = 8, 2, 1024


def make_model(kind: str, out_dir: Path) -> Path:
    """The Q8_0 GGUF of `kind` ("moe" or "dense"), made once."""
    gguf = out_dir / f"{kind}-q8_0.gguf"
    if gguf.exists():
        return gguf
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, MixtralConfig
    torch.manual_seed(0)
    if kind == "moe":
        cfg = MixtralConfig(**SHAPE, intermediate_size=EXPERT_FF, num_local_experts=N_EXPERT,
                            num_experts_per_tok=N_USED, sliding_window=None)
    else:
        cfg = LlamaConfig(**SHAPE, intermediate_size=N_USED * EXPERT_FF)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    hf_dir = out_dir / kind
    model.save_pretrained(hf_dir, safe_serialization=True)
    hf_to_gguf.convert(str(hf_dir), str(gguf), "q8_0")
    return gguf


def default_llama_bench():
    found = sorted(glob.glob(str(CACHE / "llama-bench" / "*" / "llama-bench")))
    return found[-1] if found else None


def stride_once(binary, model, ids, gen, threads):
    out, rss = run_measured([binary, "run", "-m", model, "--prompt-ids", " ".join(map(str, ids)),
                             "-n", gen, "--temperature", "0", "--seed", "0", "--ignore-eos",
                             "--json", "--threads", threads])
    j = json.loads(out.strip().splitlines()[-1])
    return {"prefill": float(j["prefill_tok_s"]), "decode": float(j["decode_tok_s"]), "rss": rss}


def llama_once(lb, model, prompt, gen, threads):
    """None when llama-bench cannot run the file."""
    try:
        out, rss = run_measured([lb, "-m", model, "-p", prompt, "-n", gen, "-t", threads, "-fa", "0",
                                 "-r", "1", "-o", "json"], timeout=900)
    except SystemExit as e:
        log(f"llama-bench failed on {model}: {str(e)[-300:]}")
        return None
    rows = json.loads(out[out.index("["):])
    res = {"rss": rss}
    for r in rows:
        res["prefill" if int(r["n_gen"]) == 0 else "decode"] = float(r["avg_ts"])
    return res


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    engines = list(report["engines"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, metric in zip(axes, ("prefill", "decode")):
        xs = np.arange(len(engines))
        for i, kind in enumerate(("dense", "moe")):
            vals = [report["engines"][e][kind][metric] for e in engines]
            bars = ax.bar(xs + 0.38 * i, vals, 0.38, label=kind)
            ax.bar_label(bars, fmt="%.1f", fontsize=7)
        ax.set_xticks(xs + 0.19, [f"{e}\nmoe/dense {report['engines'][e]['ratio'][metric]:.2f}"
                                  for e in engines], fontsize=8)
        ax.set_title(f"{metric} tok/s", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"MoE (8 experts, top-2) vs dense of equal active weights; {report['threads']} threads, "
                 f"{report['cpu']}, {report['date']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stride", default=str(ROOT / "build" / "stride"))
    ap.add_argument("--llama-bench", default=os.environ.get("LLAMA_BENCH") or default_llama_bench())
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model-dir", default=str(CACHE / "moe-bench"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "moe"))
    a = ap.parse_args()
    out_dir = Path(a.model_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    models = {kind: make_model(kind, out_dir) for kind in ("dense", "moe")}
    ids = np.random.default_rng(1234).integers(3, 255, a.prompt).tolist()
    runners = {"stride": lambda m: stride_once(a.stride, m, ids, a.gen, a.threads)}
    if a.llama_bench and os.access(a.llama_bench, os.X_OK):
        runners["llama.cpp"] = lambda m: llama_once(a.llama_bench, m, a.prompt, a.gen, a.threads)
    for kind, m in models.items():  # page the files in
        stride_once(a.stride, m, ids[:8], 2, a.threads)
    samples = {e: {k: [] for k in models} for e in runners}
    load_start = os.getloadavg()[0]  # other work on the machine skews every figure
    for rep in range(a.reps):
        for engine, run in runners.items():
            for kind, m in models.items():
                r = run(str(m))
                if r is None:
                    continue
                samples[engine][kind].append(r)
                log(f"rep {rep + 1} {engine} {kind}: prefill {r['prefill']:.1f} decode {r['decode']:.2f} tok/s")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "cpu": cpu_model(), "loadavg_start": load_start, "loadavg_end": os.getloadavg()[0], "threads": a.threads, "prompt_tokens": a.prompt, "gen_tokens": a.gen,
              "reps": a.reps, "git_commit": git_commit(), "llama_bench": a.llama_bench,
              "models": {k: {"file": str(m), "file_bytes": m.stat().st_size} for k, m in models.items()},
              "shape": {**SHAPE, "n_expert": N_EXPERT, "n_expert_used": N_USED, "expert_ff": EXPERT_FF},
              "engines": {}, "samples": samples}
    for engine, by_kind in samples.items():
        if any(not s for s in by_kind.values()):
            report[f"{engine}_missing"] = [k for k, s in by_kind.items() if not s]
            continue
        med = {k: {m: statistics.median(x[m] for x in s) for m in ("prefill", "decode")}
               for k, s in by_kind.items()}
        med["ratio"] = {m: med["moe"][m] / med["dense"][m] for m in ("prefill", "decode")}
        report["engines"][engine] = med
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(report, f, indent=2)
    plot(report, a.out + ".png")
    for e, r in report["engines"].items():
        log(f"{e}: dense prefill {r['dense']['prefill']:.1f} decode {r['dense']['decode']:.2f}; "
            f"moe prefill {r['moe']['prefill']:.1f} decode {r['moe']['decode']:.2f}; "
            f"moe/dense {r['ratio']['prefill']:.2f} / {r['ratio']['decode']:.2f}")
    log(f"wrote {a.out}.json and {a.out}.png")


if __name__ == "__main__":
    main()
