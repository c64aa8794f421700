#include "loader/rope_override.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace stride {

namespace {

Status positive(const std::optional<double>& v, const char* flag) {
  if (v && !(std::isfinite(*v) && *v > 0.0)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *v);
    return InvalidArgument(std::string(flag) + " must be a number > 0, not " + buf);
  }
  return Status::Ok();
}

Status check_values(const RopeOverride& o) {
  STRIDE_RETURN_IF_ERROR(positive(o.factor, "--rope-scale"));
  STRIDE_RETURN_IF_ERROR(positive(o.freq_scale, "--rope-freq-scale"));
  STRIDE_RETURN_IF_ERROR(positive(o.attn_factor, "--yarn-attn-factor"));
  STRIDE_RETURN_IF_ERROR(positive(o.beta_fast, "--yarn-beta-fast"));
  STRIDE_RETURN_IF_ERROR(positive(o.beta_slow, "--yarn-beta-slow"));
  STRIDE_RETURN_IF_ERROR(positive(o.freq_base, "--rope-freq-base"));
  if (o.factor && o.freq_scale)
    return InvalidArgument("give --rope-scale N or --rope-freq-scale 1/N, not both");
  if (o.original_context && (*o.original_context < 0 || *o.original_context > (int64_t)1 << 40))
    return InvalidArgument("--yarn-orig-ctx must be >= 0 (0: the model's context), not " +
                           std::to_string(*o.original_context));
  return Status::Ok();
}

// The file's scaling has a meaningful original context of its own.
bool has_original(const RopeScaling& s) {
  return s.type == RopeScalingType::Yarn || s.type == RopeScalingType::LongRope ||
         (s.type == RopeScalingType::Llama3 && s.freq_factors.empty());
}

// The file's scaling has a context extension factor another type may reuse.
bool has_factor(const RopeScaling& s) {
  return s.type == RopeScalingType::Linear || s.type == RopeScalingType::Yarn ||
         (s.type == RopeScalingType::Llama3 && s.freq_factors.empty());
}

Status scaled(const RopeOverride& o, const RopeScaling& file, RopeScalingType type,
              const std::optional<double>& factor, int64_t n_ctx_train, RopeScaling& s) {
  const std::string name = rope_scaling_name(type);
  const bool same = type == file.type;
  if (same) {
    s = file;
  } else {
    s = RopeScaling{};
    s.type = type;
    if (has_factor(file)) s.factor = file.factor;
    if (has_original(file)) s.original_context = file.original_context;
  }
  if ((o.beta_fast || o.beta_slow) && type != RopeScalingType::Yarn)
    return InvalidArgument("--yarn-beta-fast and --yarn-beta-slow apply to yarn scaling, not " + name);
  if (o.attn_factor && type != RopeScalingType::Yarn && type != RopeScalingType::LongRope)
    return InvalidArgument("--yarn-attn-factor applies to yarn (and longrope) scaling, not " + name);
  if (type == RopeScalingType::LongRope) {
    if (!same) return InvalidArgument("--rope-scaling longrope needs the model's long/short factors; the file has none");
    if (factor) return InvalidArgument("--rope-scale: longrope's scaling is the model's own factors");
  }
  // A llama3 rope_freqs tensor holds the divisors already computed; new
  // parameters recompute them from the formula, which needs both.
  if (type == RopeScalingType::Llama3 && same && !file.freq_factors.empty() && (factor || o.original_context)) {
    if (!factor || !o.original_context)
      return InvalidArgument("the model's llama3 scaling is a rope_freqs tensor: recomputing it needs both "
                             "--rope-scale and --yarn-orig-ctx");
    s.freq_factors.clear();
  }
  if (factor) s.factor = *factor;
  if (o.original_context) {
    s.original_context = *o.original_context > 0 ? *o.original_context : n_ctx_train;
    if (s.original_context <= 0)
      return InvalidArgument("--yarn-orig-ctx 0 means the model's context, which the file does not give");
  }
  if (o.attn_factor) s.attn_factor = *o.attn_factor;
  if (o.beta_fast) s.beta_fast = *o.beta_fast;
  if (o.beta_slow) s.beta_slow = *o.beta_slow;
  const bool formula = type != RopeScalingType::LongRope && s.freq_factors.empty();
  if (formula && !factor && !same && !has_factor(file))
    return InvalidArgument("--rope-scaling " + name + " needs --rope-scale N: the model has no scaling factor");
  const bool needs_original = type == RopeScalingType::Yarn || (type == RopeScalingType::Llama3 && formula);
  if (needs_original && !o.original_context && !same && !has_original(file))
    return InvalidArgument("--rope-scaling " + name +
                           " needs --yarn-orig-ctx N (the pre-training context): the model file gives none");
  if ((o.beta_fast || o.beta_slow) && s.beta_fast <= s.beta_slow)
    return InvalidArgument("yarn needs --yarn-beta-fast > --yarn-beta-slow");
  return Status::Ok();
}

}  // namespace

Status apply_rope_override(const RopeOverride& o, ModelConfig& c) {
  if (o.empty()) return Status::Ok();
  STRIDE_RETURN_IF_ERROR(check_values(o));
  const RopeScaling& file = c.rope_scaling;
  std::optional<double> factor = o.factor;
  if (o.freq_scale) factor = 1.0 / *o.freq_scale;
  const RopeScalingType type = o.type       ? *o.type
                               : file.scaled() ? file.type
                               : factor      ? RopeScalingType::Linear  // llama.cpp's default type
                                             : RopeScalingType::None;
  // Windowed layers share the global RoPE except in Gemma-3 (and a Gemma-2
  // file with a base of its own for them).
  const bool local_scaling = c.arch != Arch::Gemma3;
  const bool local_base = local_scaling && c.rope_base_local == c.rope_base;
  const bool yarn_values = o.original_context || o.attn_factor || o.beta_fast || o.beta_slow;
  if (type == RopeScalingType::None) {
    if (o.type && (factor || yarn_values))
      return InvalidArgument("--rope-scaling none takes no --rope-scale, --rope-freq-scale or --yarn-* value");
    if (yarn_values)
      return InvalidArgument("--yarn-* values need a scaling and the model has none: add --rope-scaling yarn");
    c.rope_scaling = RopeScaling{};
  } else {
    RopeScaling s;
    STRIDE_RETURN_IF_ERROR(scaled(o, file, type, factor, c.n_ctx_train, s));
    c.rope_scaling = std::move(s);
  }
  if (o.freq_base) c.rope_base = (float)*o.freq_base;
  if (local_scaling) c.rope_scaling_local = c.rope_scaling;
  if (local_base) c.rope_base_local = c.rope_base;
  return Status::Ok();
}

}  // namespace stride
