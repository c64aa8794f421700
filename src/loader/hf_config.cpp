#include "loader/hf_config.h"

#include <cmath>
#include <limits>

#include "loader/arch_gpt_oss.h"
#include "loader/config_check.h"
#include "loader/moe_config_read.h"
#include "loader/rope_scaling_read.h"

namespace stride {

namespace {

using nlohmann::json;

const json* field(const json& j, const std::string& key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Status read_int(const json& j, const std::string& key, bool required, int fallback, int& out) {
  const json* v = field(j, key);
  if (!v) {
    if (required) return NotFound("config.json: required field '" + key + "' is missing");
    out = fallback;
    return Status::Ok();
  }
  if (!v->is_number_integer()) return Corrupt("config.json: '" + key + "' must be an integer");
  const int64_t x = v->get<int64_t>();
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
    return Corrupt("config.json: '" + key + "' = " + std::to_string(x) + " is out of range");
  }
  out = (int)x;
  return Status::Ok();
}

Status read_float(const json& j, const std::string& key, float fallback, float& out) {
  const json* v = field(j, key);
  if (!v) {
    out = fallback;
    return Status::Ok();
  }
  if (!v->is_number()) return Corrupt("config.json: '" + key + "' must be a number");
  out = v->get<float>();
  if (!std::isfinite(out)) return Corrupt("config.json: '" + key + "' is not finite");
  return Status::Ok();
}

Status read_bool(const json& j, const std::string& key, bool fallback, bool& out) {
  const json* v = field(j, key);
  if (!v) {
    out = fallback;
    return Status::Ok();
  }
  if (!v->is_boolean()) return Corrupt("config.json: '" + key + "' must be a boolean");
  out = v->get<bool>();
  return Status::Ok();
}

Expected<Arch> detect_arch(const json& j) {
  std::string name;
  if (const json* a = field(j, "architectures"); a && a->is_array() && !a->empty() &&
                                                 (*a)[0].is_string()) {
    name = (*a)[0].get<std::string>();
  }
  std::string type;
  if (const json* t = field(j, "model_type"); t && t->is_string()) type = t->get<std::string>();
  if (name == "LlamaForCausalLM" || type == "llama") return Arch::Llama;
  if (name == "MistralForCausalLM" || type == "mistral") return Arch::Mistral;
  if (name == "Qwen2ForCausalLM" || type == "qwen2") return Arch::Qwen2;
  if (name == "Qwen3ForCausalLM" || type == "qwen3") return Arch::Qwen3;
  if (name == "Gemma3ForCausalLM" || type == "gemma3_text") return Arch::Gemma3;
  if (name == "Gemma2ForCausalLM" || type == "gemma2") return Arch::Gemma2;
  if (name == "Phi3ForCausalLM" || type == "phi3") return Arch::Phi3;
  if (name == "MixtralForCausalLM" || type == "mixtral") return Arch::Llama;  // llama with experts, as in GGUF
  if (name == "Qwen2MoeForCausalLM" || type == "qwen2_moe") return Arch::Qwen2Moe;
  if (name == "Qwen3MoeForCausalLM" || type == "qwen3_moe") return Arch::Qwen3Moe;
  if (name == "GptOssForCausalLM" || type == "gpt_oss") return Arch::GptOss;
  if (name.empty() && type.empty()) {
    return Corrupt("config.json: neither 'architectures' nor 'model_type' is set");
  }
  return Unsupported("config.json: architecture '" + (name.empty() ? type : name) +
                     "' is not supported (supported: LlamaForCausalLM, MistralForCausalLM, "
                     "Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, "
                     "Phi3ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
                     "GptOssForCausalLM)");
}

// rope_theta (classic) or rope_parameters {rope_theta, ...}; newer Gemma-3
// configs nest rope_parameters per layer type (full_attention / sliding_attention).
Status read_rope(const json& j, ModelConfig& c) {
  STRIDE_RETURN_IF_ERROR(
      read_float(j, "rope_theta", c.arch == Arch::Gemma3 ? 1e6f : 10000.f, c.rope_base));
  STRIDE_RETURN_IF_ERROR(read_float(j, "rope_local_base_freq", 10000.f, c.rope_base_local));
  if (const json* rs = field(j, "rope_scaling")) {
    STRIDE_RETURN_IF_ERROR(read_rope_scaling_json(*rs, j, "rope_scaling", c.rope_scaling));
  }
  const json* rp = field(j, "rope_parameters");
  if (!rp) return Status::Ok();
  if (!rp->is_object()) return Corrupt("config.json: 'rope_parameters' must be an object");
  const json* full = field(*rp, "full_attention");
  const json* local = field(*rp, "sliding_attention");
  if (!full && !local) full = rp;
  if (full) {
    STRIDE_RETURN_IF_ERROR(read_float(*full, "rope_theta", c.rope_base, c.rope_base));
    STRIDE_RETURN_IF_ERROR(read_rope_scaling_json(*full, j, "rope_parameters", c.rope_scaling));
  }
  if (local && local->is_object()) {
    STRIDE_RETURN_IF_ERROR(read_float(*local, "rope_theta", c.rope_base_local, c.rope_base_local));
    STRIDE_RETURN_IF_ERROR(read_rope_scaling_json(*local, j, "rope_parameters", c.rope_scaling_local));
  }
  return Status::Ok();
}

// layer_types ["sliding_attention" | "full_attention", ...] when present.
Status read_layer_types(const json& j, ModelConfig& c, bool& found) {
  const json* lt = field(j, "layer_types");
  found = lt != nullptr;
  if (!lt) return Status::Ok();
  if (!lt->is_array() || (int64_t)lt->size() != c.n_layer) {
    return Corrupt("config.json: 'layer_types' must be an array of num_hidden_layers entries");
  }
  c.layer_windowed.assign(c.n_layer, 0);
  for (int il = 0; il < c.n_layer; ++il) {
    const json& t = (*lt)[il];
    if (!t.is_string()) return Corrupt("config.json: layer_types entries must be strings");
    const std::string s = t.get<std::string>();
    if (s == "sliding_attention") c.layer_windowed[il] = 1;
    else if (s != "full_attention") {
      return Unsupported("config.json: layer_types[" + std::to_string(il) + "] = '" + s +
                         "' is not supported");
    }
  }
  return Status::Ok();
}

// partial_rotary_factor (top level or in rope_parameters): RoPE turns the
// first head_dim * factor dims of each head (Phi-3.5 / Phi-4 mini).
Status read_partial_rotary(const json& j, ModelConfig& c) {
  float factor = 1.f;
  STRIDE_RETURN_IF_ERROR(read_float(j, "partial_rotary_factor", 1.f, factor));
  if (const json* rp = field(j, "rope_parameters"); rp && rp->is_object()) {
    STRIDE_RETURN_IF_ERROR(read_float(*rp, "partial_rotary_factor", factor, factor));
  }
  if (!(factor > 0.f) || factor > 1.f) return Corrupt("config.json: 'partial_rotary_factor' must be in (0, 1]");
  c.rope_dim = (int)((float)c.head_dim * factor);
  return Status::Ok();
}

// Gemma-2 and Gemma-3: Gemma-2 has no QK-norm and windows every other layer.
Status read_gemma(const json& j, ModelConfig& c) {
  const bool gemma2 = c.arch == Arch::Gemma2;
  c.qk_norm = !gemma2;
  c.sandwich_norms = true;
  c.embed_scale = std::sqrt((float)c.n_embd);
  std::string act = "gelu_pytorch_tanh";
  for (const char* k : {"hidden_activation", "hidden_act"}) {
    if (const json* a = field(j, k); a && a->is_string()) act = a->get<std::string>();
  }
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh") {
    return Unsupported("config.json: hidden_activation '" + act + "' is not supported");
  }
  c.act = Activation::GeluTanh;
  float qpas = 0.f;
  STRIDE_RETURN_IF_ERROR(read_float(j, "query_pre_attn_scalar", (float)c.head_dim, qpas));
  if (!(qpas > 0.f)) return Corrupt("config.json: 'query_pre_attn_scalar' must be > 0");
  c.attn_scale = 1.f / std::sqrt(qpas);
  STRIDE_RETURN_IF_ERROR(read_float(j, "final_logit_softcapping", 0.f, c.final_logit_softcap));
  STRIDE_RETURN_IF_ERROR(read_float(j, "attn_logit_softcapping", 0.f, c.attn_logit_softcap));
  bool found = false;
  STRIDE_RETURN_IF_ERROR(read_layer_types(j, c, found));
  if (!found) {
    int period = gemma2 ? 2 : 6;
    STRIDE_RETURN_IF_ERROR(read_int(j, "sliding_window_pattern", false, period, period));
    if (period < 0) return Corrupt("config.json: 'sliding_window_pattern' must be >= 0");
    c.layer_windowed = period == 0 ? std::vector<uint8_t>(c.n_layer, 1)
                                   : periodic_window_pattern(c.n_layer, period);
  }
  return Status::Ok();
}

Status read_windows(const json& j, ModelConfig& c) {
  bool found = false;
  STRIDE_RETURN_IF_ERROR(read_layer_types(j, c, found));
  if (found || c.sliding_window == 0) return Status::Ok();
  if (c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3 || c.arch == Arch::Qwen2Moe || c.arch == Arch::Qwen3Moe) {
    bool use = false;
    STRIDE_RETURN_IF_ERROR(read_bool(j, "use_sliding_window", false, use));
    int max_window_layers = 0;
    STRIDE_RETURN_IF_ERROR(read_int(j, "max_window_layers", false, 0, max_window_layers));
    c.layer_windowed.assign(c.n_layer, 0);
    if (!use) c.sliding_window = 0;
    for (int il = 0; use && il < c.n_layer; ++il) c.layer_windowed[il] = il >= max_window_layers;
    return Status::Ok();
  }
  c.layer_windowed.assign(c.n_layer, 1);
  return Status::Ok();
}

}  // namespace

Expected<ModelConfig> config_from_hf_json(const json& root, bool has_lm_head) {
  if (!root.is_object()) return Corrupt("config.json: not a JSON object");
  // Multimodal wrappers keep the language model's fields under text_config.
  const json* tc = field(root, "text_config");
  const json& j = tc && tc->is_object() ? *tc : root;
  ModelConfig c;
  STRIDE_ASSIGN_OR_RETURN(c.arch, detect_arch(j));
  STRIDE_RETURN_IF_ERROR(read_int(j, "num_hidden_layers", true, 0, c.n_layer));
  STRIDE_RETURN_IF_ERROR(read_int(j, "hidden_size", true, 0, c.n_embd));
  STRIDE_RETURN_IF_ERROR(read_int(j, "intermediate_size", true, 0, c.n_ff));
  STRIDE_RETURN_IF_ERROR(read_int(j, "num_attention_heads", true, 0, c.n_head));
  STRIDE_RETURN_IF_ERROR(read_int(j, "vocab_size", true, 0, c.n_vocab));
  STRIDE_RETURN_IF_ERROR(read_int(j, "num_key_value_heads", false, c.n_head, c.n_head_kv));
  if (c.n_head <= 0) return Corrupt("config.json: 'num_attention_heads' must be > 0");
  if (c.n_layer <= 0 || c.n_layer > (1 << 16)) {
    return Corrupt("config.json: 'num_hidden_layers' = " + std::to_string(c.n_layer) +
                   " is out of range");
  }
  STRIDE_RETURN_IF_ERROR(read_int(j, "head_dim", false, c.n_embd / c.n_head, c.head_dim));
  c.head_dim_v = c.head_dim;
  STRIDE_RETURN_IF_ERROR(read_int(j, "max_position_embeddings", false, 0, c.n_ctx_train));
  STRIDE_RETURN_IF_ERROR(read_float(j, "rms_norm_eps", 1e-6f, c.norm_eps));
  STRIDE_RETURN_IF_ERROR(read_int(j, "sliding_window", false, 0, c.sliding_window));
  STRIDE_RETURN_IF_ERROR(read_rope(j, c));
  STRIDE_RETURN_IF_ERROR(read_partial_rotary(j, c));
  if (c.arch != Arch::Gemma3) {  // one RoPE for every layer
    c.rope_base_local = c.rope_base;
    c.rope_scaling_local = c.rope_scaling;
  }
  c.rope_neox = true;
  const bool gemma = c.arch == Arch::Gemma2 || c.arch == Arch::Gemma3;
  bool tie = gemma;  // Gemma ties by default, the others do not
  STRIDE_RETURN_IF_ERROR(read_bool(root, "tie_word_embeddings", tie, tie));
  if (tc) STRIDE_RETURN_IF_ERROR(read_bool(j, "tie_word_embeddings", tie, tie));
  c.tied_embeddings = tie || !has_lm_head;

  if (gemma) {
    STRIDE_RETURN_IF_ERROR(read_gemma(j, c));
  } else {
    const json* a = field(j, "hidden_act");
    if (a && (!a->is_string() || a->get<std::string>() != "silu")) {
      return Unsupported("config.json: hidden_act must be 'silu' for this architecture");
    }
    bool bias = false;
    STRIDE_RETURN_IF_ERROR(read_bool(j, "attention_bias", false, bias));
    const bool qwen2 = c.arch == Arch::Qwen2 || c.arch == Arch::Qwen2Moe;
    if (bias && !qwen2 && c.arch != Arch::GptOss) {
      return Unsupported("config.json: attention_bias = true is not supported for " +
                         std::string(arch_name(c.arch)));
    }
    c.attn_qkv_bias = qwen2;
    c.qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe;
    // Mixtral renormalises the chosen experts' weights; Qwen-MoE configs say.
    const bool mixtral = c.arch == Arch::Llama;
    STRIDE_RETURN_IF_ERROR(read_moe_json(j, c.n_ff, mixtral, c.moe));
    STRIDE_RETURN_IF_ERROR(read_windows(j, c));
    if (c.arch == Arch::GptOss) STRIDE_RETURN_IF_ERROR(configure_gpt_oss(c, /*from_gguf=*/false));
  }
  STRIDE_RETURN_IF_ERROR(finalize_config(c, "config.json"));
  return c;
}

}  // namespace stride
