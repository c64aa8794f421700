#include "loader/rope_scaling_read.h"

#include <cmath>

#include "loader/config_check.h"

namespace stride {

namespace {

using nlohmann::json;

constexpr size_t kMaxFactors = 1 << 14;  // pairs per head; real models have <= 256

const json* member(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A finite number at r[key], or `fallback` when absent.
Status json_number(const json& r, const char* key, const std::string& where, double fallback, double& out) {
  const json* v = member(r, key);
  if (!v) {
    out = fallback;
    return Status::Ok();
  }
  if (!v->is_number()) return Corrupt("config.json: " + where + "." + key + " must be a number");
  out = v->get<double>();
  if (!std::isfinite(out)) return Corrupt("config.json: " + where + "." + key + " is not finite");
  return Status::Ok();
}

Status json_factors(const json& r, const char* key, const std::string& where, std::vector<double>& out) {
  const json* v = member(r, key);
  if (!v || !v->is_array() || v->empty() || v->size() > kMaxFactors) {
    return Corrupt("config.json: " + where + "." + key + " must be a non-empty array of numbers");
  }
  out.clear();
  for (const json& x : *v) {
    if (!x.is_number() || !std::isfinite(x.get<double>()) || !(x.get<double>() > 0.0)) {
      return Corrupt("config.json: " + where + "." + key + " entries must be numbers > 0");
    }
    out.push_back(x.get<double>());
  }
  return Status::Ok();
}

// A 1-D f32 tensor of per-pair factors; absent: empty.
Status gguf_factors(const GGUFFile& f, const std::string& name, std::vector<double>& out) {
  out.clear();
  const TensorView* t = f.find_tensor(name);
  if (!t) return Status::Ok();
  if (t->type != DType::F32 || t->n_elements() <= 0 || t->n_elements() > (int64_t)kMaxFactors ||
      t->nbytes < t->n_elements() * (int64_t)sizeof(float)) {
    return Corrupt("GGUF: tensor " + name + " must be a small f32 vector");
  }
  const float* p = reinterpret_cast<const float*>(t->data);
  for (int64_t i = 0; i < t->n_elements(); ++i) {
    if (!std::isfinite(p[i]) || !(p[i] > 0.f)) return Corrupt("GGUF: tensor " + name + " entries must be > 0");
    out.push_back(p[i]);
  }
  return Status::Ok();
}

}  // namespace

Status read_rope_scaling_json(const json& r, const json& top, const std::string& where, RopeScaling& out) {
  if (!r.is_object()) return Corrupt("config.json: '" + where + "' must be an object");
  std::string type = "default";
  for (const char* k : {"type", "rope_type"}) {  // rope_type wins
    if (const json* t = member(r, k); t && t->is_string()) type = t->get<std::string>();
  }
  RopeScaling s;
  if (type == "default") {
    out = s;
    return Status::Ok();
  }
  if (type == "linear") s.type = RopeScalingType::Linear;
  else if (type == "yarn") s.type = RopeScalingType::Yarn;
  else if (type == "llama3") s.type = RopeScalingType::Llama3;
  else if (type == "longrope" || type == "su") s.type = RopeScalingType::LongRope;
  else {
    return Unsupported("config.json: " + where + " type '" + type +
                       "' is not supported (supported: linear, yarn, llama3, longrope)");
  }
  const json& top_obj = top.is_object() ? top : r;
  double max_pos = 0, original = 0;
  STRIDE_RETURN_IF_ERROR(json_number(top_obj, "max_position_embeddings", where, 0, max_pos));
  STRIDE_RETURN_IF_ERROR(json_number(r, "original_max_position_embeddings", where, max_pos, original));
  STRIDE_RETURN_IF_ERROR(json_number(top_obj, "original_max_position_embeddings", where, original, original));
  if (original < 0 || original > 1e12) return Corrupt("config.json: original_max_position_embeddings is out of range");
  s.original_context = (int64_t)original;
  // A missing yarn/longrope factor is the extension the context implies.
  const bool factor_optional = s.type == RopeScalingType::Yarn || s.type == RopeScalingType::LongRope;
  const double implied = original > 0 && max_pos > 0 ? max_pos / original : 0.0;
  if (!member(r, "factor") && !factor_optional)
    return Corrupt("config.json: " + where + ".factor is required for " + type);
  STRIDE_RETURN_IF_ERROR(json_number(r, "factor", where, implied, s.factor));
  if (!(s.factor > 0.0) && s.type != RopeScalingType::LongRope)
    return Corrupt("config.json: " + where + ".factor must be > 0");
  STRIDE_RETURN_IF_ERROR(json_number(r, "attention_factor", where, 0.0, s.attn_factor));
  if (s.attn_factor < 0) return Corrupt("config.json: " + where + ".attention_factor must be > 0");
  switch (s.type) {
    case RopeScalingType::Yarn: {
      STRIDE_RETURN_IF_ERROR(json_number(r, "mscale", where, 0.0, s.mscale));
      STRIDE_RETURN_IF_ERROR(json_number(r, "mscale_all_dim", where, 0.0, s.mscale_all_dim));
      STRIDE_RETURN_IF_ERROR(json_number(r, "beta_fast", where, 32.0, s.beta_fast));
      STRIDE_RETURN_IF_ERROR(json_number(r, "beta_slow", where, 1.0, s.beta_slow));
      if (s.beta_fast == 0) s.beta_fast = 32.0;  // transformers: `or 32`
      if (s.beta_slow == 0) s.beta_slow = 1.0;
      if (!(s.beta_fast > 0) || !(s.beta_slow > 0))
        return Corrupt("config.json: " + where + ".beta_fast and beta_slow must be > 0");
      if (const json* t = member(r, "truncate")) {
        if (!t->is_boolean()) return Corrupt("config.json: " + where + ".truncate must be a boolean");
        s.truncate = t->get<bool>();
      }
      break;
    }
    case RopeScalingType::Llama3:
      STRIDE_RETURN_IF_ERROR(json_number(r, "low_freq_factor", where, 1.0, s.low_freq_factor));
      STRIDE_RETURN_IF_ERROR(json_number(r, "high_freq_factor", where, 4.0, s.high_freq_factor));
      break;
    case RopeScalingType::LongRope:
      STRIDE_RETURN_IF_ERROR(json_factors(r, "short_factor", where, s.short_factor));
      STRIDE_RETURN_IF_ERROR(json_factors(r, "long_factor", where, s.long_factor));
      break;
    case RopeScalingType::None:
    case RopeScalingType::Linear:
      break;
  }
  out = std::move(s);
  return Status::Ok();
}

Status read_rope_scaling_gguf(const GGUFFile& f, const std::string& a, int64_t n_ctx_train, RopeScaling& out) {
  const std::string key = a + ".rope.scaling.";
  std::string type = f.get_string_or(key + "type", "");
  RopeScaling s;
  double factor = 0, original = 0, attn = 0;
  STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "factor", 0.0, factor));
  if (factor == 0) STRIDE_RETURN_IF_ERROR(read_gguf_number(f, a + ".rope.scale_linear", 0.0, factor));  // older files
  if (factor < 0) return Corrupt("GGUF: " + key + "factor must be > 0");
  STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "original_context_length", (double)n_ctx_train, original));
  if (original < 0 || original > 1e12) return Corrupt("GGUF: " + key + "original_context_length is out of range");
  STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "attn_factor", 0.0, attn));
  if (attn < 0) return Corrupt("GGUF: " + key + "attn_factor must be > 0");
  s.original_context = (int64_t)original;

  std::vector<double> freqs, long_f, short_f;
  STRIDE_RETURN_IF_ERROR(gguf_factors(f, "rope_freqs.weight", freqs));
  STRIDE_RETURN_IF_ERROR(gguf_factors(f, "rope_factors_long.weight", long_f));
  STRIDE_RETURN_IF_ERROR(gguf_factors(f, "rope_factors_short.weight", short_f));
  if (type.empty() || type == "none") {
    // llama.cpp's converters write no type for llama3 and Phi-3 LongRoPE: the tensors say it.
    if (!long_f.empty() || !short_f.empty()) type = "longrope";
    else if (!freqs.empty()) type = "llama3";
    else if (factor > 0 && factor != 1.0) type = "linear";
  }
  if (type.empty() || type == "none") {
    out = s;
    return Status::Ok();
  }
  if (type == "linear") {
    s.type = RopeScalingType::Linear;
    s.factor = factor > 0 ? factor : 1.0;
  } else if (type == "yarn") {
    s.type = RopeScalingType::Yarn;
    s.factor = factor > 0 ? factor : 1.0;
    double log_mul = 0;
    STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "yarn_beta_fast", 32.0, s.beta_fast));
    STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "yarn_beta_slow", 1.0, s.beta_slow));
    STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "yarn_attn_factor", 0.0, s.attn_factor));
    STRIDE_RETURN_IF_ERROR(read_gguf_number(f, key + "yarn_log_multiplier", 0.0, log_mul));
    if (!(s.beta_fast > 0) || !(s.beta_slow > 0) || s.attn_factor < 0)
      return Corrupt("GGUF: " + key + "yarn_* values must be > 0");
    if (log_mul > 0) {  // as llama.cpp: mscale 1 over mscale_all_dim
      s.mscale = 1.0;
      s.mscale_all_dim = log_mul;
    }
    if (attn > 0) s.extra_attn_factor = attn;
  } else if (type == "llama3") {
    s.type = RopeScalingType::Llama3;
    if (freqs.empty()) return Corrupt("GGUF: llama3 rope scaling needs the rope_freqs tensor");
    s.freq_factors = std::move(freqs);
  } else if (type == "longrope") {
    s.type = RopeScalingType::LongRope;
    if (long_f.empty() || short_f.empty())
      return Corrupt("GGUF: longrope scaling needs the rope_factors_long and rope_factors_short tensors");
    s.long_factor = std::move(long_f);
    s.short_factor = std::move(short_f);
    s.attn_factor = attn;
    s.factor = original > 0 ? (double)n_ctx_train / original : 1.0;
  } else {
    return Unsupported("GGUF: rope scaling type '" + type +
                       "' is not supported (supported: linear, yarn, llama3, longrope)");
  }
  out = std::move(s);
  return Status::Ok();
}

}  // namespace stride
