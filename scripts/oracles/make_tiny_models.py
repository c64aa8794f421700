#!/usr/bin/env python3
"""Tiny random-weight models + their HF reference logits (the numerical oracle).

Usage:
  ~/.cache/stride/venv/bin/python scripts/oracles/make_tiny_models.py [--out DIR]

For each architecture (llama, mistral, mistral_nemo, qwen2, qwen3, gemma2, gemma3,
phi3, phi3_window, and the mixture-of-experts mixtral, qwen2moe, qwen3moe), and
for llama with each RoPE scaling (llama_linear, llama_yarn, llama_llama3,
llama_longrope; phi3 is LongRoPE too: original context 64, ids of 96 tokens)
this writes, under
DIR/<name>/ (default tests/data/generated/tiny):
  config.json + model.safetensors   the HF folder (f32)
  model-f32.gguf                    llama.cpp-convention GGUF (f32; not for
                                    the MoE models, which only the converter writes)
  model-f16.gguf                    (llama only) 2-D weights in f16
  model-conv-f32.gguf               the folder converted by llama.cpp's own
                                    convert_hf_to_gguf.py (hf_to_gguf.py)
  ids.json                          the fixed token sequence (longer than windows)
  logits.npy                        HF eager f32 logits [n_tokens, n_vocab]
  logits_kvf16.npy                  the same with K (after RoPE) and V rounded to f16
  logits_policy<j>[_kvf16].npy      with an --attention policy mask on global layers
  logits_prefix.npy                 (RoPE-scaled models) HF logits of the first
                                    SEQ_LEN ids: within the original context
and DIR/manifest.json describing them (--only NAME,... regenerates those
models and keeps the manifest's other entries). All weights are rounded to values that
f16 represents exactly, so the f16 GGUF and the f32 HF folder are the same model.
"""
import argparse
import contextlib
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_to_gguf  # noqa: E402
from tiny_gguf import write_gguf  # noqa: E402

SEQ_LEN = 40
# RoPE-scaled models: prompts past their tiny original context (64).
ROPE_ORIGINAL_CONTEXT = 64
ROPE_SEQ_LEN = 96
VOCAB = 256
SEED = 1234


def _common(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                num_attention_heads=4, num_key_value_heads=2,
                max_position_embeddings=128, tie_word_embeddings=False,
                bos_token_id=1, eos_token_id=2, pad_token_id=0)
    base.update(kw)
    return base


def _rope_factors(seed, lo, hi, n=8):
    rng = np.random.default_rng(seed)
    return [float(x) for x in np.round(rng.uniform(lo, hi, size=n), 3)]


def rope_scaled_configs(LlamaConfig):
    """Llama with each RoPE scaling; head_dim 16 (8 rotated pairs)."""
    orig = ROPE_ORIGINAL_CONTEXT
    scalings = {
        "llama_linear": {"rope_type": "linear", "factor": 4.0},
        "llama_yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": orig},
        "llama_llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": orig},
        # No factor / attention_factor: both follow from 256 / 64, as in Phi-3.
        "llama_longrope": {"rope_type": "longrope", "original_max_position_embeddings": orig,
                           "short_factor": _rope_factors(5, 1.0, 1.5),
                           "long_factor": _rope_factors(6, 1.0, 12.0)},
    }
    return {name: LlamaConfig(**_common(num_hidden_layers=2, max_position_embeddings=4 * orig,
                                        rms_norm_eps=1e-5,
                                        rope_parameters={"rope_theta": 10000.0, **rp}))
            for name, rp in scalings.items()}


def phi3_rope(rope_type="default", **kw):
    """Phi-3 rope_parameters; llama.cpp's converter requires
    original_max_position_embeddings in them even without scaling (Phi3Config
    also needs it at the top level, where its default 4096 would win)."""
    return {"rope_type": rope_type, "rope_theta": 10000.0,
            "original_max_position_embeddings": ROPE_ORIGINAL_CONTEXT, **kw}


# Mixture-of-experts models: their GGUF comes from llama.cpp's converter only.
MOE_NAMES = ("mixtral", "qwen2moe", "qwen3moe")


def moe_configs():
    """Small experts (hidden 32-64), top-2 of 6-8, so that every expert is used
    by some of the 40 tokens and most by only a few."""
    from transformers import MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig
    return {
        # GGUF arch "llama" with expert_count; renormalises the top-2 weights.
        "mixtral": MixtralConfig(**_common(num_hidden_layers=2, intermediate_size=64,
                                           num_local_experts=6, num_experts_per_tok=2,
                                           rope_theta=1000000.0, rms_norm_eps=1e-5,
                                           sliding_window=None)),
        # Shared expert behind a sigmoid gate; weights not renormalised; q/k/v biases.
        "qwen2moe": Qwen2MoeConfig(**_common(num_hidden_layers=2, moe_intermediate_size=32,
                                             shared_expert_intermediate_size=96,
                                             num_experts=8, num_experts_per_tok=2,
                                             norm_topk_prob=False, rope_theta=1000000.0,
                                             rms_norm_eps=1e-6, use_sliding_window=False)),
        # QK-norm as qwen3; renormalised (llama.cpp assumes so for qwen3moe files).
        "qwen3moe": Qwen3MoeConfig(**_common(num_hidden_layers=2, head_dim=32,
                                             moe_intermediate_size=32, num_experts=8,
                                             num_experts_per_tok=2, norm_topk_prob=True,
                                             rope_theta=1000000.0, rms_norm_eps=1e-6,
                                             use_sliding_window=False)),
    }


def build_configs():
    from transformers import (Gemma2Config, Gemma3TextConfig, LlamaConfig, MistralConfig, Phi3Config,
                              Qwen2Config, Qwen3Config)
    return {
        "llama": LlamaConfig(**_common(num_hidden_layers=3, rope_theta=10000.0,
                                       rms_norm_eps=1e-5)),
        # Window 8 < SEQ_LEN, so the window is exercised on most positions.
        "mistral": MistralConfig(**_common(num_hidden_layers=2, rope_theta=50000.0,
                                           rms_norm_eps=1e-5, sliding_window=8,
                                           head_dim=16)),
        # Qwen2 has q/k/v biases; tied embeddings exercise the shared output path.
        "qwen2": Qwen2Config(**_common(num_hidden_layers=2, rope_theta=1000000.0,
                                       rms_norm_eps=1e-6, use_sliding_window=False,
                                       tie_word_embeddings=True)),
        # head_dim 32 != hidden/heads (16), layers 0-4 windowed, layer 5 global.
        "gemma3": Gemma3TextConfig(**_common(num_hidden_layers=6, head_dim=32,
                                             sliding_window=8, query_pre_attn_scalar=32,
                                             rope_theta=1000000.0,
                                             rope_local_base_freq=10000.0,
                                             rms_norm_eps=1e-6,
                                             tie_word_embeddings=True,
                                             bos_token_id=2, eos_token_id=1)),
        # QK-norm (RMSNorm per head before RoPE), no biases, head_dim 32 != 64/4.
        "qwen3": Qwen3Config(**_common(num_hidden_layers=2, head_dim=32, rope_theta=1000000.0,
                                       rms_norm_eps=1e-6, use_sliding_window=False)),
        **rope_scaled_configs(LlamaConfig),
        # Later additions come last, so the seeds of the models above stay put.
        # Mistral Nemo / Ministral shape: head_dim 32 != hidden/heads (16), no window.
        "mistral_nemo": MistralConfig(**_common(num_hidden_layers=2, rope_theta=1000000.0,
                                                rms_norm_eps=1e-5, sliding_window=None,
                                                head_dim=32)),
        # Even layers windowed (0, 2), odd global; both soft-caps bite at these
        # magnitudes; query_pre_attn_scalar = head_dim as in Gemma-2 2B/9B (the
        # converted GGUF does not carry it: llama.cpp derives it from head_dim).
        "gemma2": Gemma2Config(**_common(num_hidden_layers=4, head_dim=32, sliding_window=8,
                                         query_pre_attn_scalar=32, rope_theta=10000.0,
                                         rms_norm_eps=1e-6, attn_logit_softcapping=4.0,
                                         final_logit_softcapping=8.0, tie_word_embeddings=True,
                                         bos_token_id=2, eos_token_id=1)),
        # Fused qkv_proj / gate_up_proj, LongRoPE, partial rotary (8 of 16 dims).
        "phi3": Phi3Config(**_common(num_hidden_layers=2, max_position_embeddings=4 * ROPE_ORIGINAL_CONTEXT,
                                     original_max_position_embeddings=ROPE_ORIGINAL_CONTEXT,
                                     rms_norm_eps=1e-5, sliding_window=None,
                                     rope_parameters=phi3_rope(
                                         "longrope", partial_rotary_factor=0.5,
                                         short_factor=_rope_factors(7, 1.0, 1.5, n=4),
                                         long_factor=_rope_factors(8, 1.0, 12.0, n=4)))),
        # Phi-3 mini's sliding window (every layer), unscaled RoPE.
        "phi3_window": Phi3Config(**_common(num_hidden_layers=2, rms_norm_eps=1e-5, sliding_window=8,
                                            original_max_position_embeddings=ROPE_ORIGINAL_CONTEXT,
                                            rope_parameters=phi3_rope())),
        **moe_configs(),
    }


# Scored on ROPE_SEQ_LEN ids (past the original context), plus a prefix within it.
LONG_CONTEXT = {"llama_linear", "llama_yarn", "llama_llama3", "llama_longrope", "phi3"}
# Models whose every window is native (sliding_window recorded in the manifest).
NATIVE_WINDOW = {"mistral", "gemma2", "gemma3", "phi3_window"}


def randomize(model, gemma: bool, gen: torch.Generator):
    """Non-trivial weights so that a wrong convention shows up in the logits."""
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "norm" in name:
                # Gemma stores (scale - 1): its RMSNorm multiplies by (1 + w).
                center = 0.0 if gemma else 1.0
                p.copy_(center + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            # Exactly representable in f16: the f16 GGUF is then the same model.
            p.copy_(p.half().float())


# `--attention` policies apply to global (not natively windowed) layers; each
# entry: policy string -> mask predicate over (query pos, key pos), absolute
# positions. Natively windowed models (mistral) must ignore the policy.
POLICIES = {
    "llama": {"window:size=8": lambda q, k: k > q - 8,
              "rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "qwen2": {"window:size=8": lambda q, k: k > q - 8},
    "qwen3": {"window:size=8": lambda q, k: k > q - 8,
              "rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "mistral": {"dense": None, "window:size=4": None, "rswa:sinks=2,window=4,pos=abs": None},
    "mistral_nemo": {"window:size=8": lambda q, k: k > q - 8,
                     "rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "gemma2": {"window:size=16": lambda q, k: k > q - 16,
               "rswa:sinks=4,window=12,pos=abs": lambda q, k: (k < 4) | (k > q - 12)},
    "phi3": {"window:size=8": lambda q, k: k > q - 8,
             "rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "phi3_window": {"window:size=4": None},
    "gemma3": {"window:size=16": lambda q, k: k > q - 16,
               "rswa:sinks=4,window=12,pos=abs": lambda q, k: (k < 4) | (k > q - 12)},
    "llama_linear": {},
    "llama_yarn": {"rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "llama_llama3": {},
    "llama_longrope": {"rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "mixtral": {"window:size=8": lambda q, k: k > q - 8,
                "rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
    "qwen2moe": {"window:size=8": lambda q, k: k > q - 8},
    "qwen3moe": {"rswa:sinks=4,window=8,pos=abs": lambda q, k: (k < 4) | (k > q - 8)},
}


@contextlib.contextmanager
def kv_f16(enabled: bool = True):
    """Round K (after RoPE) and V to f16 inside HF attention: the oracle for an
    engine whose KV cache holds f16, as llama.cpp's default cache does."""
    import importlib
    mods = [importlib.import_module(f"transformers.models.{m}.modeling_{m}")
            for m in ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3",
                      "mixtral", "qwen2_moe", "qwen3_moe")]
    saved = [(m, m.eager_attention_forward) for m in mods]
    if enabled:
        for m, orig in saved:
            def rounded(module, query, key, value, *a, _orig=orig, **k):
                return _orig(module, query, key.half().float(), value.half().float(), *a, **k)
            m.eager_attention_forward = rounded
    try:
        yield
    finally:
        for m, orig in saved:
            m.eager_attention_forward = orig


def plain_logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids]), use_cache=False).logits[0].numpy()


def policy_logits(model, cfg, ids, pred):
    """HF logits with a policy mask on the global layers (windowed layers unchanged)."""
    n = len(ids)
    q, k = torch.arange(n)[:, None], torch.arange(n)[None, :]

    def additive(allowed):
        return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]

    glob = additive((k <= q) & pred(q, k))
    if getattr(cfg, "layer_types", None) and "sliding_attention" in cfg.layer_types:
        w = cfg.sliding_window
        mask = {"full_attention": glob, "sliding_attention": additive((k <= q) & (k > q - w))}
    else:
        mask = glob
    with torch.no_grad():
        return model(torch.tensor([ids]), attention_mask=mask, use_cache=False).logits[0].numpy()


def legacy_config_keys(cfg_path, cfg):
    """transformers 5 writes rope_parameters; older loaders read rope_theta."""
    with open(cfg_path) as f:
        j = json.load(f)
    rp = j.get("rope_parameters") or {}
    if "full_attention" in rp:
        j.setdefault("rope_theta", rp["full_attention"]["rope_theta"])
        j.setdefault("rope_local_base_freq", rp["sliding_attention"]["rope_theta"])
    elif "rope_theta" in rp:
        j.setdefault("rope_theta", rp["rope_theta"])
    with open(cfg_path, "w") as f:
        json.dump(j, f, indent=2, sort_keys=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--out", default=os.path.join(root, "tests/data/generated/tiny"))
    ap.add_argument("--only", default="", help="comma-separated names to regenerate (the manifest keeps the others)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = np.random.default_rng(SEED)
    ids_short = [int(x) for x in rng.integers(3, VOCAB, size=SEQ_LEN)]
    ids_long = [int(x) for x in rng.integers(3, VOCAB, size=ROPE_SEQ_LEN)]

    manifest = {"seq_len": SEQ_LEN, "models": {}}
    manifest_path = os.path.join(args.out, "manifest.json")
    if only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    for i, (name, cfg) in enumerate(build_configs().items()):
        if only and name not in only:
            continue
        cfg._attn_implementation = "eager"
        cfg.torch_dtype = torch.float32
        gen = torch.Generator().manual_seed(SEED + i)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager",
                                                 dtype=torch.float32)
        randomize(model, name.startswith("gemma"), gen)
        model.eval()
        scaled = name in LONG_CONTEXT
        ids = ids_long if scaled else ids_short

        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        model.save_pretrained(d, safe_serialization=True)
        legacy_config_keys(os.path.join(d, "config.json"), cfg)
        if os.path.exists(os.path.join(d, "generation_config.json")):
            os.remove(os.path.join(d, "generation_config.json"))

        logits = plain_logits(model, ids)  # [n_tokens, n_vocab]
        np.save(os.path.join(d, "logits.npy"), logits)
        with kv_f16():
            np.save(os.path.join(d, "logits_kvf16.npy"), plain_logits(model, ids))
        with open(os.path.join(d, "ids.json"), "w") as f:
            json.dump(ids, f)
        if scaled:  # LongRoPE: short factors for a sequence within the original context
            np.save(os.path.join(d, "logits_prefix.npy"), plain_logits(model, ids[:SEQ_LEN]))

        state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
        ggufs = {}
        if name not in MOE_NAMES:
            ggufs["f32"] = "model-f32.gguf"
            write_gguf(os.path.join(d, ggufs["f32"]), name, cfg, state, f16=False)
        if name == "llama":
            ggufs["f16"] = "model-f16.gguf"
            write_gguf(os.path.join(d, ggufs["f16"]), name, cfg, state, f16=True)
        # The same folder through llama.cpp's own converter (the GGUF users have).
        ggufs["conv"] = "model-conv-f32.gguf"
        hf_to_gguf.convert(d, os.path.join(d, ggufs["conv"]), "f32")

        policies = {}
        for j, (spec, pred) in enumerate(POLICIES[name].items()):
            if pred is None:  # natively windowed everywhere: the policy changes nothing
                policies[spec] = {"f32": f"{name}/logits.npy", "kvf16": f"{name}/logits_kvf16.npy"}
                continue
            policies[spec] = {}
            for kind in ("f32", "kvf16"):
                fname = f"logits_policy{j}{'' if kind == 'f32' else '_kvf16'}.npy"
                with kv_f16(kind == "kvf16"):
                    np.save(os.path.join(d, fname), policy_logits(model, cfg, ids, pred))
                policies[spec][kind] = f"{name}/{fname}"

        window = getattr(cfg, "sliding_window", None) if name in NATIVE_WINDOW else None
        moe = {"n_expert": getattr(cfg, "num_local_experts", None) or cfg.num_experts,
               "n_expert_used": cfg.num_experts_per_tok} if name in MOE_NAMES else None
        manifest["models"][name] = {"hf": name, "moe": moe, "gguf": {k: f"{name}/{v}" for k, v in ggufs.items()},
                                    "logits": {"f32": f"{name}/logits.npy",
                                               "kvf16": f"{name}/logits_kvf16.npy"},
                                    "sliding_window": window, "policies": policies,
                                    "n_vocab": VOCAB, "logit_absmax": float(np.abs(logits).max()),
                                    "seq_len": len(ids)}
        if scaled:
            manifest["models"][name]["logits_prefix"] = {"f32": f"{name}/logits_prefix.npy",
                                                         "n_tokens": SEQ_LEN}
        print(f"tiny {name}: layers={cfg.num_hidden_layers} window={window} "
              f"|logits|max={np.abs(logits).max():.3f} -> {d}")

    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)


if __name__ == "__main__":
    main()
