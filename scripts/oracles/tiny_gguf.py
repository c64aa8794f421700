"""HF state dict -> GGUF with llama.cpp's conventions (as convert_hf_to_gguf.py).

Usage (library): write_gguf(path, name, hf_config, state_dict_numpy, f16=False)

Conventions reproduced:
  * tensor names token_embd / blk.N.attn_q ... / output_norm / output;
  * llama & mistral: Q/K rows permuted so that llama.cpp's adjacent-pair RoPE
    equals HF's rotate_half RoPE; mistral keeps arch "llama" (as llama.cpp's
    converter) and records llama.attention.sliding_window;
  * gemma2, gemma3: +1 folded into every RMSNorm weight (HF multiplies by 1 + w);
    gemma2 records its soft-caps and sliding window;
  * phi3: fused attn_qkv and ffn_up (gate rows, then up rows) tensors as
    HF's qkv_proj / gate_up_proj, rope.dimension_count for partial rotary,
    and its sliding window (0 when none);
  * 1-D tensors stay f32 in the f16 file;
  * RoPE scaling as llama.cpp's converters write it: linear and yarn as
    rope.scaling.* metadata; llama3 as the rope_freqs tensor (per-pair
    divisors of the frequencies) and no type; longrope as type "longrope",
    rope.scaling.attn_factor, original_context_length and the
    rope_factors_long / rope_factors_short tensors (Phi-3's convention);
  * a complete byte-level "gpt2" tokenizer: 255 byte tokens plus one merge
    "Ġ Ġ" -> token 255 (byte 0xFF never occurs in UTF-8, so it is free).
"""
import numpy as np

from byte_map import bytes_to_unicode

import gguf

ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gemma3": "gemma3",
        "llama_linear": "llama", "llama_yarn": "llama", "llama_llama3": "llama",
        "llama_longrope": "llama", "mistral_nemo": "llama", "gemma2": "gemma2", "phi3": "phi3",
        "phi3_window": "phi3"}


def permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """HF (half-split) rows -> llama.cpp (interleaved pairs) rows, per head."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def _map_name(name: str, arch_name: str) -> str | None:
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":
        return "output.weight"
    parts = name.split(".")
    if parts[:2] != ["model", "layers"]:
        raise ValueError(f"unexpected tensor {name}")
    bid, rest = parts[2], ".".join(parts[3:])
    gemma = arch_name in ("gemma2", "gemma3")
    table = {
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight",
        "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight",
        "self_attn.q_proj.bias": "attn_q.bias",
        "self_attn.k_proj.bias": "attn_k.bias",
        "self_attn.v_proj.bias": "attn_v.bias",
        "self_attn.o_proj.weight": "attn_output.weight",
        "self_attn.q_norm.weight": "attn_q_norm.weight",
        "self_attn.k_norm.weight": "attn_k_norm.weight",
        "post_attention_layernorm.weight":
            "post_attention_norm.weight" if gemma else "ffn_norm.weight",
        "pre_feedforward_layernorm.weight": "ffn_norm.weight",
        "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
        "self_attn.qkv_proj.weight": "attn_qkv.weight",
        "mlp.gate_up_proj.weight": "ffn_up.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight",
        "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight",
    }
    if rest not in table:
        raise ValueError(f"unexpected tensor {name}")
    return f"blk.{bid}.{table[rest]}"


def _rope_theta(cfg, layer_type="full_attention"):
    rp = getattr(cfg, "rope_parameters", None) or {}
    if layer_type in rp:
        return float(rp[layer_type]["rope_theta"])
    if "rope_theta" in rp:
        return float(rp["rope_theta"])
    return float(getattr(cfg, "rope_theta", 10000.0))


def _rope_params(cfg):
    rp = getattr(cfg, "rope_parameters", None) or {}
    return rp.get("full_attention", rp)


def _llama3_divisors(rp, head_dim):
    """Per-pair divisors of base^(-2i/d) that give llama3's scaled frequencies."""
    import math
    base, factor = rp["rope_theta"], rp["factor"]
    low, high = rp.get("low_freq_factor", 1.0), rp.get("high_freq_factor", 4.0)
    orig = rp["original_max_position_embeddings"]
    out = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * base ** (i / head_dim)
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def _write_rope_scaling(w, cfg, head_dim):
    import math
    rp = _rope_params(cfg)
    kind = rp.get("rope_type", "default")
    if kind == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rp["factor"])
    elif kind == "yarn":
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rp["factor"])
        w.add_rope_scaling_orig_ctx_len(rp["original_max_position_embeddings"])
    elif kind == "llama3":
        w.add_tensor("rope_freqs.weight", _llama3_divisors(rp, head_dim))
    elif kind == "longrope":
        orig = rp["original_max_position_embeddings"]
        scale = cfg.max_position_embeddings / orig
        attn = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
        w.add_rope_scaling_type(gguf.RopeScalingType.LONGROPE)
        w.add_rope_scaling_attn_factors(attn)
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_tensor("rope_factors_long.weight", np.array(rp["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rp["short_factor"], dtype=np.float32))


def write_gguf(path: str, name: str, cfg, state: dict, f16: bool = False) -> None:
    arch = ARCH[name]
    n_head, n_head_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_head

    w = gguf.GGUFWriter(path, arch)
    w.add_name(f"stride-tiny-{name}")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(_rope_theta(cfg))
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    if arch == "llama":
        w.add_rope_dimension_count(head_dim)
        w.add_vocab_size(cfg.vocab_size)
    if arch == "phi3":
        rp = _rope_params(cfg)
        w.add_rope_dimension_count(int(head_dim * rp.get("partial_rotary_factor", 1.0)))
    if name in ("mistral", "gemma2", "gemma3") or arch == "phi3":
        w.add_sliding_window(cfg.sliding_window or 0)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
    rp = _rope_params(cfg)
    _write_rope_scaling(w, cfg, int(head_dim * rp.get("partial_rotary_factor", 1.0)))

    b2u = bytes_to_unicode()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    assert cfg.vocab_size == 256
    space = b2u[ord(" ")]
    tokens = [b2u[b] for b in range(255)] + [space + space]
    w.add_token_list(tokens)
    w.add_token_types([int(gguf.TokenType.NORMAL)] * cfg.vocab_size)
    w.add_token_merges([f"{space} {space}"])  # llama.cpp requires a merges array
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    w.add_add_bos_token(False)

    tied = bool(getattr(cfg, "tie_word_embeddings", False))
    for hf_name in sorted(state):
        if tied and hf_name == "lm_head.weight":
            continue
        t = np.ascontiguousarray(state[hf_name], dtype=np.float32)
        if arch == "llama" and hf_name.endswith("self_attn.q_proj.weight"):
            t = permute_qk(t, n_head)
        elif arch == "llama" and hf_name.endswith("self_attn.k_proj.weight"):
            t = permute_qk(t, n_head_kv)
        if arch in ("gemma2", "gemma3") and hf_name.endswith("norm.weight"):
            t = t + 1.0
        if f16 and t.ndim == 2:
            t = t.astype(np.float16)
        w.add_tensor(_map_name(hf_name, name), np.ascontiguousarray(t))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
