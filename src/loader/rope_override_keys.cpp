#include "loader/rope_override_keys.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace stride {

namespace {

std::string named(const RopeOverrideKey& k) { return std::string(k.flag) + " (" + k.key + ")"; }

Status parse_double(const RopeOverrideKey& k, const std::string& v, std::optional<double>& out) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(x))
    return InvalidArgument(named(k) + ": '" + v + "' is not a number");
  out = x;
  return Status::Ok();
}

Status parse_int(const RopeOverrideKey& k, const std::string& v, std::optional<int64_t>& out) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0) return InvalidArgument(named(k) + ": '" + v + "' is not an integer");
  out = x;
  return Status::Ok();
}

Status parse_type(const RopeOverrideKey& k, const std::string& v, std::optional<RopeScalingType>& out) {
  for (RopeScalingType t : {RopeScalingType::None, RopeScalingType::Linear, RopeScalingType::Yarn,
                            RopeScalingType::Llama3, RopeScalingType::LongRope}) {
    if (v == rope_scaling_name(t)) {
      out = t;
      return Status::Ok();
    }
  }
  return InvalidArgument(named(k) + ": unknown type '" + v + "' (none, linear, yarn, llama3, longrope)");
}

}  // namespace

const std::vector<RopeOverrideKey>& rope_override_keys() {
  static const std::vector<RopeOverrideKey> keys = {
      {"rope_scaling", "--rope-scaling",
       "RoPE scaling instead of the model file's: none | linear | yarn | llama3 | longrope (the file's factors)"},
      {"rope_scale", "--rope-scale", "RoPE context extension factor N (positions / N)"},
      {"rope_freq_scale", "--rope-freq-scale", "RoPE frequency scale: 1 / the --rope-scale factor"},
      {"yarn_orig_ctx", "--yarn-orig-ctx", "yarn / llama3: the pre-training context (0: the model's context)"},
      {"yarn_attn_factor", "--yarn-attn-factor", "yarn: magnitude of cos/sin (default 0.1 ln(factor) + 1)"},
      {"yarn_beta_fast", "--yarn-beta-fast", "yarn: ramp bound in rotations, extrapolated above (default 32)"},
      {"yarn_beta_slow", "--yarn-beta-slow", "yarn: ramp bound in rotations, interpolated below (default 1)"},
      {"rope_freq_base", "--rope-freq-base", "RoPE base frequency (theta) instead of the model file's"},
  };
  return keys;
}

Status set_rope_override_value(RopeOverride& o, const std::string& key, const std::string& value) {
  for (const RopeOverrideKey& k : rope_override_keys()) {
    if (key != k.key) continue;
    const std::string_view name = k.key;
    if (name == "rope_scaling") return parse_type(k, value, o.type);
    if (name == "rope_scale") return parse_double(k, value, o.factor);
    if (name == "rope_freq_scale") return parse_double(k, value, o.freq_scale);
    if (name == "yarn_orig_ctx") return parse_int(k, value, o.original_context);
    if (name == "yarn_attn_factor") return parse_double(k, value, o.attn_factor);
    if (name == "yarn_beta_fast") return parse_double(k, value, o.beta_fast);
    if (name == "yarn_beta_slow") return parse_double(k, value, o.beta_slow);
    if (name == "rope_freq_base") return parse_double(k, value, o.freq_base);
  }
  return InvalidArgument("unknown RoPE override key '" + key + "'");
}

}  // namespace stride
