#include "loader/rope_scaling.h"

#include <algorithm>
#include <cstdio>

namespace stride {

const char* rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Yarn: return "yarn";
    case RopeScalingType::Llama3: return "llama3";
    case RopeScalingType::LongRope: return "longrope";
  }
  return "unknown";
}

int64_t rope_usable_context(const RopeScaling& s, int64_t n_ctx_train) {
  switch (s.type) {
    case RopeScalingType::Linear:
    case RopeScalingType::Yarn: {
      const int64_t original = s.original_context > 0 ? s.original_context : n_ctx_train;
      return std::max(n_ctx_train, (int64_t)(s.factor * (double)original));
    }
    case RopeScalingType::None:
    case RopeScalingType::Llama3:    // configs give the extended context itself
    case RopeScalingType::LongRope:
      break;
  }
  return n_ctx_train;
}

std::string rope_scaling_summary(const RopeScaling& s) {
  char buf[256];
  std::string out = rope_scaling_name(s.type);
  auto add = [&](const char* fmt, auto... v) {
    std::snprintf(buf, sizeof buf, fmt, v...);
    out += buf;
  };
  switch (s.type) {
    case RopeScalingType::None:
      break;
    case RopeScalingType::Linear:
      add(", factor %g", s.factor);
      break;
    case RopeScalingType::Yarn:
      add(", factor %g, original context %lld, beta fast %g slow %g", s.factor, (long long)s.original_context,
          s.beta_fast, s.beta_slow);
      if (s.attn_factor > 0) add(", attention factor %g", s.attn_factor);
      if (!s.truncate) out += ", no truncation";
      break;
    case RopeScalingType::Llama3:
      if (!s.freq_factors.empty()) {
        add(", rope_freqs tensor (%zu pairs)", s.freq_factors.size());
      } else {
        add(", factor %g, low/high freq factor %g/%g, original context %lld", s.factor, s.low_freq_factor,
            s.high_freq_factor, (long long)s.original_context);
      }
      break;
    case RopeScalingType::LongRope:
      add(", original context %lld, short/long factors (%zu pairs)", (long long)s.original_context,
          s.short_factor.size());
      if (s.attn_factor > 0) add(", attention factor %g", s.attn_factor);
      break;
  }
  return out;
}

}  // namespace stride
