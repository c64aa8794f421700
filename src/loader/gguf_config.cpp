// ModelConfig from GGUF metadata (keys "<arch>.block_count", ...), following
// the conventions llama.cpp's converters write.
#include <cmath>
#include <limits>

#include "loader/arch_gemma2.h"
#include "loader/arch_gpt_oss.h"
#include "loader/config_check.h"
#include "loader/model_source.h"
#include "loader/moe_config_read.h"
#include "loader/rope_scaling_read.h"

namespace stride {

namespace {

// Reads an integer key into an int. Missing: `fallback` unless required.
Status read_int(const GGUFFile& f, const std::string& key, bool required, int fallback, int& out) {
  if (!f.has(key)) {
    if (required) return NotFound("GGUF: required metadata '" + key + "' is missing");
    out = fallback;
    return Status::Ok();
  }
  auto v = f.get_int(key);
  if (!v.ok()) return Corrupt("GGUF: " + v.status().message());
  if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
    return Corrupt("GGUF: metadata '" + key + "' = " + std::to_string(*v) + " is out of range");
  }
  out = (int)*v;
  return Status::Ok();
}

Status read_float(const GGUFFile& f, const std::string& key, float fallback, float& out) {
  double v = 0;
  STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key, fallback, v));
  out = (float)v;
  return Status::Ok();
}

Expected<Arch> parse_arch(const std::string& name) {
  if (name == "llama") return Arch::Llama;
  if (name == "mistral") return Arch::Mistral;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  if (name == "gemma3") return Arch::Gemma3;
  if (name == "gemma2") return Arch::Gemma2;
  if (name == "phi3") return Arch::Phi3;
  if (name == "qwen2moe") return Arch::Qwen2Moe;
  if (name == "qwen3moe") return Arch::Qwen3Moe;
  if (name == "gpt-oss") return Arch::GptOss;
  return Unsupported("GGUF: architecture '" + name + "' is not supported "
                     "(supported: llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3, qwen2moe, qwen3moe, gpt-oss)");
}

}  // namespace

Status gguf_window_pattern(const GGUFFile& f, const std::string& arch, int default_period, ModelConfig& c) {
  const std::string key = arch + ".attention.sliding_window_pattern";
  const GGUFValue* v = f.find(key);
  if (!v) {
    c.layer_windowed = periodic_window_pattern(c.n_layer, default_period);
    return Status::Ok();
  }
  if (v->type == GGUFType::ARRAY) {
    auto arr = f.get_int_array(key);
    if (!arr.ok()) return Corrupt("GGUF: " + arr.status().message());
    if ((int64_t)arr->size() != c.n_layer) {
      return Corrupt("GGUF: metadata '" + key + "' has " + std::to_string(arr->size()) +
                     " entries but block_count is " + std::to_string(c.n_layer));
    }
    c.layer_windowed.assign(arr->begin(), arr->end());
    for (auto& w : c.layer_windowed) w = w != 0;
    return Status::Ok();
  }
  int period = 0;
  STRIDE_RETURN_IF_ERROR(read_int(f, key, true, 0, period));
  if (period < 0) return Corrupt("GGUF: metadata '" + key + "' must be >= 0");
  // As in llama.cpp, period 0 means every layer is windowed.
  c.layer_windowed = period == 0 ? std::vector<uint8_t>(c.n_layer, 1)
                                 : periodic_window_pattern(c.n_layer, period);
  return Status::Ok();
}

Status read_gguf_number(const GGUFFile& f, const std::string& key, double fallback, double& out) {
  if (!f.has(key)) {
    out = fallback;
    return Status::Ok();
  }
  auto v = f.get_float(key);
  if (!v.ok()) return Corrupt("GGUF: " + v.status().message());
  if (!std::isfinite(*v)) return Corrupt("GGUF: metadata '" + key + "' is not finite");
  out = *v;
  return Status::Ok();
}

Expected<ModelConfig> config_from_gguf(const GGUFFile& f) {
  auto arch_str = f.get_string("general.architecture");
  if (!arch_str.ok()) {
    return Corrupt("GGUF: general.architecture missing or not a string: " +
                   arch_str.status().message());
  }
  STRIDE_ASSIGN_OR_RETURN(const Arch arch, parse_arch(*arch_str));
  const std::string& a = *arch_str;
  ModelConfig c;
  c.arch = arch;
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".block_count", true, 0, c.n_layer));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".embedding_length", true, 0, c.n_embd));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".feed_forward_length", true, 0, c.n_ff));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".attention.head_count", true, 0, c.n_head));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".attention.head_count_kv", false, c.n_head, c.n_head_kv));
  if (c.n_head <= 0) {
    return Corrupt("GGUF: " + a + ".attention.head_count = " + std::to_string(c.n_head) +
                   " must be > 0");
  }
  const int default_hd = c.n_embd / c.n_head;
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".attention.key_length", false, default_hd, c.head_dim));
  STRIDE_RETURN_IF_ERROR(
      read_int(f, a + ".attention.value_length", false, c.head_dim, c.head_dim_v));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".rope.dimension_count", false, c.head_dim, c.rope_dim));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".context_length", false, 0, c.n_ctx_train));
  STRIDE_RETURN_IF_ERROR(read_float(f, a + ".attention.layer_norm_rms_epsilon",
                                    c.arch == Arch::Gemma3 ? 1e-6f : 1e-5f, c.norm_eps));
  STRIDE_RETURN_IF_ERROR(
      read_float(f, a + ".rope.freq_base", c.arch == Arch::Gemma3 ? 1e6f : 10000.f, c.rope_base));
  STRIDE_RETURN_IF_ERROR(read_rope_scaling_gguf(f, a, c.n_ctx_train, c.rope_scaling));
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".attention.sliding_window", false, 0, c.sliding_window));
  STRIDE_RETURN_IF_ERROR(read_float(f, a + ".attn_logit_softcapping", 0.f, c.attn_logit_softcap));
  STRIDE_RETURN_IF_ERROR(read_float(f, a + ".final_logit_softcapping", 0.f, c.final_logit_softcap));

  // Vocabulary: explicit key, else the tokenizer's list, else the embedding.
  const GGUFValue* toks = f.find("tokenizer.ggml.tokens");
  const TensorView* embd = f.find_tensor("token_embd.weight");
  int vocab_fallback = 0;
  if (toks && toks->type == GGUFType::ARRAY && toks->array_count <= (uint64_t)INT32_MAX) {
    vocab_fallback = (int)toks->array_count;
  } else if (embd && embd->n_dims >= 2 && embd->ne[1] <= INT32_MAX) {
    vocab_fallback = (int)embd->ne[1];
  }
  STRIDE_RETURN_IF_ERROR(read_int(f, a + ".vocab_size", false, vocab_fallback, c.n_vocab));

  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  c.rope_base_local = c.rope_base;
  c.rope_scaling_local = c.rope_scaling;
  switch (arch) {
    case Arch::Llama:
    case Arch::Mistral:
      c.rope_neox = false;  // converter permuted Q/K rows for adjacent-pair RoPE
      break;
    case Arch::Qwen2:
    case Arch::Qwen2Moe:
      c.rope_neox = true;
      c.attn_qkv_bias = true;
      break;
    case Arch::Qwen3:
    case Arch::Qwen3Moe:
      c.rope_neox = true;
      c.qk_norm = true;  // RMSNorm on q and k per head, no q/k/v bias
      break;
    case Arch::Gemma3: {
      c.rope_neox = true;
      c.qk_norm = true;
      c.sandwich_norms = true;
      c.act = Activation::GeluTanh;
      c.embed_scale = std::sqrt((float)c.n_embd);
      STRIDE_RETURN_IF_ERROR(read_float(f, a + ".rope.freq_base_swa", 10000.f, c.rope_base_local));
      c.rope_scaling_local = RopeScaling{};  // scaling applies to the global layers only
      float qpas = 0.f;
      STRIDE_RETURN_IF_ERROR(read_float(f, a + ".attention.query_pre_attn_scalar", 0.f, qpas));
      if (qpas < 0.f) return Corrupt("GGUF: " + a + ".attention.query_pre_attn_scalar must be > 0");
      if (c.head_dim > 0) c.attn_scale = 1.f / std::sqrt(qpas > 0.f ? qpas : (float)c.head_dim);
      // llama.cpp's default: every 6th layer global.
      if (c.n_layer > 0 && c.n_layer < (1 << 20)) STRIDE_RETURN_IF_ERROR(gguf_window_pattern(f, a, 6, c));
      break;
    }
    case Arch::Gemma2:
      STRIDE_RETURN_IF_ERROR(gemma2_from_gguf(f, c));
      break;
    case Arch::Phi3:  // fused tensors: fused_tensors.h; a sliding window covers every layer
      c.rope_neox = true;
      break;
    case Arch::GptOss:
      break;  // configure_gpt_oss below, once the experts are read
  }
  // llama.cpp renormalises the chosen experts' weights except for Qwen2-MoE.
  STRIDE_RETURN_IF_ERROR(read_moe_gguf(f, a, c.n_ff, arch != Arch::Qwen2Moe, c.moe));
  if (arch == Arch::GptOss) STRIDE_RETURN_IF_ERROR(configure_gpt_oss(c, /*from_gguf=*/true));
  if (c.layer_windowed.empty() && c.sliding_window > 0 && c.n_layer > 0 && c.n_layer < (1 << 20)) {
    c.layer_windowed.assign(c.n_layer, 1);
  }
  STRIDE_RETURN_IF_ERROR(finalize_config(c, "GGUF"));
  return c;
}

}  // namespace stride
