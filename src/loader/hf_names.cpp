#include "loader/hf_names.h"

#include <cctype>
#include <string_view>
#include <utility>

namespace stride {

namespace {

bool consume(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Expert suffix: "experts.E.w1.weight" (Mixtral) or "experts.E.gate_proj.weight"
// (Qwen-MoE) -> "ffn_gate.E.weight", the per-expert names of early Mixtral GGUFs.
std::string expert_suffix(std::string_view rest) {
  size_t digits = 0;
  while (digits < rest.size() && digits < 5 && std::isdigit((unsigned char)rest[digits])) ++digits;
  if (digits == 0 || digits >= rest.size() || rest[digits] != '.') return "";
  const std::string expert(rest.substr(0, digits));
  std::string_view proj = rest.substr(digits + 1);
  static const std::pair<std::string_view, std::string_view> kExpert[] = {
      {"w1.weight", "ffn_gate."}, {"w3.weight", "ffn_up."}, {"w2.weight", "ffn_down."},
      {"gate_proj.weight", "ffn_gate."}, {"up_proj.weight", "ffn_up."}, {"down_proj.weight", "ffn_down."},
  };
  for (const auto& [hf, gg] : kExpert)
    if (proj == hf) return std::string(gg) + std::to_string(std::stoi(expert)) + ".weight";
  return "";
}

// Router, experts and Qwen2-MoE's shared expert with its sigmoid gate.
std::string moe_suffix(std::string_view rest) {
  if (!consume(rest, "block_sparse_moe.") && !consume(rest, "mlp.")) return "";
  if (rest == "gate.weight" || rest == "router.weight") return "ffn_gate_inp.weight";
  if (rest == "router.bias") return "ffn_gate_inp.bias";  // gpt-oss
  if (rest == "shared_expert_gate.weight") return "ffn_gate_inp_shexp.weight";
  if (rest == "shared_expert.gate_proj.weight") return "ffn_gate_shexp.weight";
  if (rest == "shared_expert.up_proj.weight") return "ffn_up_shexp.weight";
  if (rest == "shared_expert.down_proj.weight") return "ffn_down_shexp.weight";
  if (consume(rest, "experts.")) return expert_suffix(rest);
  return "";
}

// Per-layer suffix (after "model.layers.N.") -> GGUF suffix (after "blk.N.").
std::string layer_suffix(std::string_view rest, Arch arch) {
  static const std::pair<std::string_view, std::string_view> kProj[] = {
      {"self_attn.q_proj.", "attn_q."},   {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."},   {"self_attn.o_proj.", "attn_output."},
      {"mlp.gate_proj.", "ffn_gate."},    {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."},
      // Phi-3's fused projections (split by fused_tensors.h).
      {"self_attn.qkv_proj.", "attn_qkv."}, {"mlp.gate_up_proj.", "ffn_up."},
  };
  for (const auto& [hf, gg] : kProj) {
    std::string_view r = rest;
    if (consume(r, hf) && (r == "weight" || r == "bias")) return std::string(gg) + std::string(r);
  }
  const bool gemma = arch == Arch::Gemma2 || arch == Arch::Gemma3;
  if (std::string moe = moe_suffix(rest); !moe.empty()) return moe;
  if (rest == "input_layernorm.weight") return "attn_norm.weight";
  if (rest == "self_attn.sinks") return "attn_sinks.weight";  // gpt-oss
  if (rest == "post_attention_layernorm.weight") {
    return gemma ? "post_attention_norm.weight" : "ffn_norm.weight";
  }
  if (gemma || arch == Arch::Qwen3 || arch == Arch::Qwen3Moe) {
    if (rest == "self_attn.q_norm.weight") return "attn_q_norm.weight";
    if (rest == "self_attn.k_norm.weight") return "attn_k_norm.weight";
  }
  if (gemma) {
    if (rest == "pre_feedforward_layernorm.weight") return "ffn_norm.weight";
    if (rest == "post_feedforward_layernorm.weight") return "post_ffw_norm.weight";
  }
  return "";
}

}  // namespace

std::string hf_to_gguf_name(const std::string& hf_name, Arch arch) {
  std::string_view s = hf_name;
  consume(s, "language_model.");  // multimodal wrappers
  if (s == "model.embed_tokens.weight") return "token_embd.weight";
  if (s == "model.norm.weight") return "output_norm.weight";
  if (s == "lm_head.weight") return "output.weight";
  if (!consume(s, "model.layers.")) return "";
  size_t digits = 0;
  while (digits < s.size() && digits < 6 && std::isdigit((unsigned char)s[digits])) ++digits;
  if (digits == 0 || digits >= s.size() || s[digits] != '.') return "";
  const std::string layer(s.substr(0, digits));
  const std::string suffix = layer_suffix(s.substr(digits + 1), arch);
  if (suffix.empty()) return "";
  return "blk." + std::to_string(std::stoi(layer)) + "." + suffix;
}

}  // namespace stride
