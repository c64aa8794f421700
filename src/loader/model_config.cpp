#include "loader/model_config.h"

#include <string>

#include "loader/config_check.h"

namespace stride {

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::Llama: return "llama";
    case Arch::Mistral: return "mistral";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Gemma3: return "gemma3";
    case Arch::Gemma2: return "gemma2";
    case Arch::Phi3: return "phi3";
    case Arch::Qwen2Moe: return "qwen2moe";
    case Arch::Qwen3Moe: return "qwen3moe";
    case Arch::GptOss: return "gpt-oss";
  }
  return "unknown";
}

std::vector<uint8_t> periodic_window_pattern(int n_layer, int period) {
  std::vector<uint8_t> w(n_layer > 0 ? n_layer : 0, 0);
  if (period <= 0) return w;
  for (int il = 0; il < n_layer; ++il) w[il] = (il + 1) % period != 0;
  return w;
}

Status finalize_config(ModelConfig& c, const std::string& origin) {
  auto bad = [&](const std::string& field, long long v, const std::string& why) {
    return Corrupt(origin + ": " + field + " = " + std::to_string(v) + " " + why);
  };
  if (c.n_layer <= 0) return bad("n_layer (block count)", c.n_layer, "must be > 0");
  if (c.n_embd <= 0) return bad("n_embd (embedding length)", c.n_embd, "must be > 0");
  if (c.n_head <= 0) return bad("n_head (head count)", c.n_head, "must be > 0");
  if (c.n_head_kv <= 0) return bad("n_head_kv (head count kv)", c.n_head_kv, "must be > 0");
  if (c.n_head % c.n_head_kv != 0) {
    return Corrupt(origin + ": n_head " + std::to_string(c.n_head) +
                   " is not a multiple of n_head_kv " + std::to_string(c.n_head_kv));
  }
  if (c.n_ff <= 0) return bad("n_ff (feed forward length)", c.n_ff, "must be > 0");
  if (c.n_vocab <= 0) return bad("n_vocab (vocab size)", c.n_vocab, "must be > 0");
  if (c.head_dim <= 0) return bad("head_dim (key length)", c.head_dim, "must be > 0");
  if (c.head_dim_v <= 0) c.head_dim_v = c.head_dim;
  if (c.rope_dim <= 0) c.rope_dim = c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    return bad("rope_dim (rope dimension count)", c.rope_dim,
               "must be even and <= head_dim " + std::to_string(c.head_dim));
  }
  if (c.sliding_window < 0) return bad("sliding_window", c.sliding_window, "must be >= 0");
  if (c.n_ctx_train < 0) return bad("n_ctx_train (context length)", c.n_ctx_train, "must be >= 0");
  if (!(c.norm_eps > 0.f)) return Corrupt(origin + ": norm_eps must be > 0");
  if (!(c.rope_base > 0.f) || !(c.rope_base_local > 0.f)) {
    return Corrupt(origin + ": rope base frequency must be > 0");
  }
  for (const RopeScaling* rs : {&c.rope_scaling, &c.rope_scaling_local}) {
    for (const std::vector<double>* v : {&rs->freq_factors, &rs->short_factor, &rs->long_factor}) {
      if (!v->empty() && (int)v->size() != c.rope_dim / 2) {
        return Corrupt(origin + ": rope scaling factors have " + std::to_string(v->size()) +
                       " entries, rope_dim " + std::to_string(c.rope_dim) + " needs " +
                       std::to_string(c.rope_dim / 2));
      }
    }
    if (rs->scaled() && !(rs->factor > 0.0)) return Corrupt(origin + ": rope scaling factor must be > 0");
  }
  if (c.layer_windowed.empty()) c.layer_windowed.assign(c.n_layer, 0);
  if ((int)c.layer_windowed.size() != c.n_layer) {
    return Corrupt(origin + ": sliding window pattern has " +
                   std::to_string(c.layer_windowed.size()) + " entries but n_layer is " +
                   std::to_string(c.n_layer));
  }
  if (c.sliding_window == 0) c.layer_windowed.assign(c.n_layer, 0);
  return Status::Ok();
}

}  // namespace stride
