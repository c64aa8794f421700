#include "model/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace stride {

namespace {

constexpr double kTwoPi = 2.0 * std::numbers::pi;

// YaRN's magnitude for a context extension of `scale`.
double yarn_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// Dimension index at which a pair turns `rotations` times over the original context.
double yarn_correction_dim(double rotations, int dim, double base, double original) {
  return dim * std::log(original / (rotations * kTwoPi)) / (2.0 * std::log(base));
}

void apply_yarn(const RopeScaling& s, double base, int dim, double original, RopeTable& t) {
  double low = yarn_correction_dim(s.beta_fast, dim, base, original);
  double high = yarn_correction_dim(s.beta_slow, dim, base, original);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, (double)(dim - 1));
  if (low == high) high += 0.001;  // no zero-width ramp
  for (size_t i = 0; i < t.inv_freq.size(); ++i) {
    const double ramp = std::clamp(((double)i - low) / (high - low), 0.0, 1.0);
    const double extrapolate = 1.0 - ramp;  // 1: keep the pair's trained frequency
    const double extrap = t.inv_freq[i], interp = extrap / s.factor;
    t.inv_freq[i] = interp * (1.0 - extrapolate) + extrap * extrapolate;
  }
  double mag = s.attn_factor;
  if (!(mag > 0.0)) {
    mag = s.mscale > 0.0 && s.mscale_all_dim > 0.0
              ? yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim)
              : yarn_mscale(s.factor, 1.0);
  }
  t.magnitude = (float)(mag * s.extra_attn_factor);
}

void apply_llama3(const RopeScaling& s, double original, RopeTable& t) {
  const double low_wavelen = original / s.low_freq_factor;
  const double high_wavelen = original / s.high_freq_factor;
  for (double& f : t.inv_freq) {
    const double wavelen = kTwoPi / f;
    if (wavelen > low_wavelen) {
      f /= s.factor;
    } else if (wavelen >= high_wavelen) {  // between the two: blend
      const double smooth = (original / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1.0 - smooth) * f / s.factor + smooth * f;
    }
  }
}

Status divide_by(const std::vector<double>& factors, const char* what, RopeTable& t) {
  if (factors.size() != t.inv_freq.size()) {
    return Corrupt(std::string("rope scaling: ") + what + " has " + std::to_string(factors.size()) +
                   " entries, the rotation needs " + std::to_string(t.inv_freq.size()));
  }
  for (size_t i = 0; i < factors.size(); ++i) {
    if (!(factors[i] > 0.0)) return Corrupt(std::string("rope scaling: ") + what + " entries must be > 0");
    t.inv_freq[i] /= factors[i];
  }
  return Status::Ok();
}

}  // namespace

Expected<RopeTable> rope_table(const RopeScaling& s, double base, int rot_dim, bool neox,
                               int64_t n_ctx_train, int64_t context) {
  if (!(base > 0.0) || rot_dim <= 0 || rot_dim % 2 != 0) {
    return InvalidArgument("rope: base must be > 0 and the rotated width even and > 0");
  }
  if (s.scaled() && !(s.factor > 0.0)) return Corrupt("rope scaling: factor must be > 0");
  RopeTable t = RopeTable::plain(base, rot_dim, 1.0, neox);
  const double original = (double)rope_original_context(s, n_ctx_train);
  const bool needs_original = s.type == RopeScalingType::Yarn || s.type == RopeScalingType::LongRope ||
                              (s.type == RopeScalingType::Llama3 && s.freq_factors.empty());
  if (needs_original && !(original > 0.0)) {
    return Corrupt(std::string("rope scaling ") + rope_scaling_name(s.type) +
                   ": the original context length is unknown");
  }
  if (s.type == RopeScalingType::Yarn && !(base > 1.0)) return Corrupt("rope scaling yarn: the base must be > 1");
  if (s.type == RopeScalingType::LongRope && !(s.attn_factor > 0.0) && s.factor > 1.0 && !(original > 1.0))
    return Corrupt("rope scaling longrope: the original context must be > 1");
  switch (s.type) {
    case RopeScalingType::None:
      break;
    case RopeScalingType::Linear:
      for (double& f : t.inv_freq) f /= s.factor;
      break;
    case RopeScalingType::Yarn:
      apply_yarn(s, base, rot_dim, original, t);
      break;
    case RopeScalingType::Llama3:
      if (!s.freq_factors.empty()) {
        STRIDE_RETURN_IF_ERROR(divide_by(s.freq_factors, "rope_freqs", t));
      } else {
        if (!(s.high_freq_factor > s.low_freq_factor) || !(s.low_freq_factor > 0.0))
          return Corrupt("rope scaling llama3: needs 0 < low_freq_factor < high_freq_factor");
        apply_llama3(s, original, t);
      }
      break;
    case RopeScalingType::LongRope: {
      const bool use_long = context > (int64_t)original;
      STRIDE_RETURN_IF_ERROR(divide_by(use_long ? s.long_factor : s.short_factor,
                                       use_long ? "long_factor" : "short_factor", t));
      double mag = s.attn_factor;
      if (!(mag > 0.0)) {
        mag = s.factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(s.factor) / std::log(original));
      }
      t.magnitude = (float)(mag * s.extra_attn_factor);
      break;
    }
  }
  return t;
}

}  // namespace stride
