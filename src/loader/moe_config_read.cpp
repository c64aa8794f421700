#include "loader/moe_config_read.h"

namespace stride {

namespace {

constexpr int kMaxExperts = 1 << 12;
constexpr int kMaxHidden = 1 << 20;

// A count in [lo, hi] or a Corrupt naming the field.
Status check_range(const std::string& origin, const std::string& key, int64_t v, int64_t lo, int64_t hi, int& out) {
  if (v < lo || v > hi) {
    return Corrupt(origin + ": '" + key + "' = " + std::to_string(v) + " must be in [" + std::to_string(lo) +
                   ", " + std::to_string(hi) + "]");
  }
  out = (int)v;
  return Status::Ok();
}

Status check_used(const std::string& origin, MoeConfig& m) {
  if (!m.active()) return Status::Ok();
  if (m.n_expert_used <= 0 || m.n_expert_used > m.n_expert) {
    return Corrupt(origin + ": experts used per token (" + std::to_string(m.n_expert_used) +
                   ") must be in [1, " + std::to_string(m.n_expert) + "]");
  }
  return Status::Ok();
}

Status gguf_int(const GGUFFile& f, const std::string& key, int64_t fallback, int64_t hi, int& out) {
  int64_t v = fallback;
  if (f.has(key)) {
    auto got = f.get_int(key);
    if (!got.ok()) return Corrupt("GGUF: " + got.status().message());
    v = *got;
  }
  return check_range("GGUF", key, v, 0, hi, out);
}

const nlohmann::json* field(const nlohmann::json& j, const std::string& key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Status json_int(const nlohmann::json& j, const std::string& key, int64_t fallback, int64_t hi, int& out) {
  int64_t v = fallback;
  if (const nlohmann::json* x = field(j, key)) {
    if (!x->is_number_integer()) return Corrupt("config.json: '" + key + "' must be an integer");
    v = x->get<int64_t>();
  }
  return check_range("config.json", key, v, 0, hi, out);
}

}  // namespace

Status read_moe_gguf(const GGUFFile& f, const std::string& a, int n_ff, bool norm_default, MoeConfig& m) {
  m = MoeConfig{};
  STRIDE_RETURN_IF_ERROR(gguf_int(f, a + ".expert_count", 0, kMaxExperts, m.n_expert));
  if (!m.active()) return Status::Ok();
  STRIDE_RETURN_IF_ERROR(gguf_int(f, a + ".expert_used_count", 0, kMaxExperts, m.n_expert_used));
  STRIDE_RETURN_IF_ERROR(gguf_int(f, a + ".expert_feed_forward_length", n_ff, kMaxHidden, m.n_ff_expert));
  STRIDE_RETURN_IF_ERROR(gguf_int(f, a + ".expert_shared_feed_forward_length", 0, kMaxHidden, m.n_ff_shared));
  m.norm_topk_prob = norm_default;
  const std::string norm_key = a + ".expert_weights_norm";
  if (f.has(norm_key)) {
    auto b = f.get_bool(norm_key);
    if (!b.ok()) return Corrupt("GGUF: " + b.status().message());
    m.norm_topk_prob = *b;
  }
  if (m.n_ff_expert <= 0) return Corrupt("GGUF: '" + a + ".expert_feed_forward_length' must be > 0");
  return check_used("GGUF", m);
}

Status read_moe_json(const nlohmann::json& j, int n_ff, bool norm_default, MoeConfig& m) {
  m = MoeConfig{};
  const char* count_key = field(j, "num_local_experts") ? "num_local_experts" : "num_experts";
  STRIDE_RETURN_IF_ERROR(json_int(j, count_key, 0, kMaxExperts, m.n_expert));
  if (!m.active()) return Status::Ok();
  STRIDE_RETURN_IF_ERROR(json_int(j, "num_experts_per_tok", 0, kMaxExperts, m.n_expert_used));
  STRIDE_RETURN_IF_ERROR(json_int(j, "moe_intermediate_size", n_ff, kMaxHidden, m.n_ff_expert));
  STRIDE_RETURN_IF_ERROR(json_int(j, "shared_expert_intermediate_size", 0, kMaxHidden, m.n_ff_shared));
  m.norm_topk_prob = norm_default;
  if (const nlohmann::json* b = field(j, "norm_topk_prob")) {
    if (!b->is_boolean()) return Corrupt("config.json: 'norm_topk_prob' must be a boolean");
    m.norm_topk_prob = b->get<bool>();
  }
  // Dense layers between sparse ones are not supported: every layer routes.
  int step = 1;
  STRIDE_RETURN_IF_ERROR(json_int(j, "decoder_sparse_step", 1, 1 << 16, step));
  const nlohmann::json* dense = field(j, "mlp_only_layers");
  if (step != 1 || (dense && (!dense->is_array() || !dense->empty()))) {
    return Unsupported("config.json: models mixing dense and expert layers (decoder_sparse_step, "
                       "mlp_only_layers) are not supported");
  }
  if (m.n_ff_expert <= 0) return Corrupt("config.json: 'moe_intermediate_size' must be > 0");
  return check_used("config.json", m);
}

}  // namespace stride
