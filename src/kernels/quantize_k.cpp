#include "kernels/quantize_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant_blocks.h"

namespace stride {
namespace {

using namespace quant;

constexpr int kSub = 32;                 // elements of a sub-block
constexpr int kSubs = kQKK / kSub;       // sub-blocks of a super-block
constexpr int kScaleLevels = 63;         // 6-bit sub-block scales and mins

// How a sub-block's candidate scales are spread: the candidate k (0..steps)
// maps the range onto (levels + first + k * spacing) steps. Eleven and eight
// candidates: twice as many (a 0.1 spacing) lowered the error by under 0.2%
// on real head rows and took 1.6x the time.
struct ScaleSearch {
  int levels;       // largest quantized value: 15 (Q4_K), 31 (Q5_K)
  float first;      // offset of the first candidate, in steps
  float spacing;    // between candidates, in steps
  int steps;        // candidates after the first
};
constexpr ScaleSearch kQ4Search{15, -1.0f, 0.2f, 10};
constexpr ScaleSearch kQ5Search{31, -0.5f, 0.2f, 7};

// A sub-block's values as x ~= scale * q - min, q in 0..levels, min >= 0.
struct SubFit {
  float scale = 0;
  float min = 0;
};

// Sums over a sub-block in 8 interleaved partial sums, so that the compiler
// vectorizes them (a single running float sum is one long dependency chain
// it may not reorder). term(i) is the i-th element's addend.
template <typename Term>
float lane_sum(const Term& term) {
  float acc[8] = {};
  for (int i = 0; i < kSub; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += term(i + j);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// v rounded to the nearest level in 0..levels, as a float (ties to even:
// adding 1.5 * 2^23 drops the fraction; no libm call, so the loops vectorize).
float level_value(float v, float levels) {
  const float c = std::clamp(v, 0.0f, levels);
  return (c + 12582912.0f) - 12582912.0f;
}

// The weighted sums a fit of x ~= scale * l + offset needs, for levels l.
struct FitSums {
  float sw = 0, swx = 0, swl = 0, swl2 = 0, swxl = 0;
};

// The (scale, min) of the least weighted squared error for the levels the
// sums come from, and that error (swx2: sum of w x^2); false when the levels
// are all equal. A min that would go negative is pinned to 0.
bool least_squares(const FitSums& f, float swx2, SubFit& fit, float& error) {
  const float det = f.sw * f.swl2 - f.swl * f.swl;
  if (!(det > 0)) return false;
  const float inv_det = 1.0f / det;
  float a = (f.sw * f.swxl - f.swx * f.swl) * inv_det;
  float b = (f.swl2 * f.swx - f.swl * f.swxl) * inv_det;  // x ~= a * l + b
  if (b > 0) {
    b = 0;
    a = f.swxl / f.swl2;
  }
  fit.scale = a;
  fit.min = -b;
  // sum w (a l + b - x)^2 expanded over the sums, in double: the terms nearly cancel.
  const double da = a, db = b;
  error = (float)(da * da * f.swl2 + 2 * da * db * f.swl + db * db * f.sw - 2 * da * f.swxl - 2 * db * f.swx + swx2);
  return true;
}

// Fits one sub-block: levels from each candidate scale over [lo, hi], then
// the least-squares scale and min for those levels; the best candidate wins.
// q receives its levels.
SubFit fit_sub_block(const float* x, const float* w, const ScaleSearch& s, uint8_t* q) {
  const float lo = std::min(0.0f, *std::min_element(x, x + kSub));
  const float hi = *std::max_element(x, x + kSub);
  if (hi <= lo) {
    std::fill(q, q + kSub, 0);
    return {0, -lo};
  }
  const float range = hi - lo, levels = (float)s.levels;
  const float sw = lane_sum([&](int i) { return w[i]; });
  const float swx = lane_sum([&](int i) { return w[i] * x[i]; });
  const float swx2 = lane_sum([&](int i) { return w[i] * x[i] * x[i]; });
  // The plain grid: range / levels per step from lo.
  SubFit best{range / levels, -lo};
  float best_l[kSub], l[kSub];
  for (int i = 0; i < kSub; ++i) best_l[i] = level_value((x[i] - lo) * (levels / range), levels);
  float best_error = lane_sum([&](int i) {
    const float d = best.scale * best_l[i] - best.min - x[i];
    return w[i] * d * d;
  });
  for (int k = 0; k <= s.steps; ++k) {
    const float inv = (levels + s.first + s.spacing * (float)k) / range;
    for (int i = 0; i < kSub; ++i) l[i] = level_value(inv * (x[i] - lo), levels);
    FitSums f;
    f.sw = sw;
    f.swx = swx;
    f.swl = lane_sum([&](int i) { return w[i] * l[i]; });
    f.swl2 = lane_sum([&](int i) { return w[i] * l[i] * l[i]; });
    f.swxl = lane_sum([&](int i) { return w[i] * l[i] * x[i]; });
    SubFit fit;
    float e;
    if (least_squares(f, swx2, fit, e) && e < best_error) {
      best_error = e;
      best = fit;
      std::copy(l, l + kSub, best_l);
    }
  }
  for (int i = 0; i < kSub; ++i) q[i] = (uint8_t)best_l[i];
  return best;
}

// Sub-block j's 6-bit scale and min into the 12 packed bytes (the inverse of k_scale_min).
void put_scale_min(int j, uint8_t sc, uint8_t m, uint8_t* packed) {
  if (j < 4) {
    packed[j] = sc;
    packed[j + 4] = m;
  } else {
    packed[j + 4] = (uint8_t)((sc & 0xF) | ((m & 0xF) << 4));
    packed[j - 4] |= (uint8_t)((sc >> 4) << 6);
    packed[j] |= (uint8_t)((m >> 4) << 6);
  }
}

// The weight of each element's squared error: larger values weigh more, as
// their error moves a dot product more.
void element_weights(const float* x, float* w) {
  const float rms = std::sqrt(lane_sum([&](int i) { return x[i] * x[i]; }) / kSub);
  for (int i = 0; i < kSub; ++i) w[i] = rms + std::fabs(x[i]);
}

// A sub-block's 6-bit scale and min as stored.
struct StoredFit {
  uint8_t sc = 0, m = 0;
};

// Rounding the fitted scale and min to 6-bit multiples of d and dmin can move
// them off the best pair: the neighbours of the rounded (sc, m) are tried
// too, each with its elements requantized, and the least weighted error is
// kept. q receives the levels of the pair kept.
StoredFit store_sub_block(const float* x, const float* w, int levels, float d, float dmin, uint8_t sc0,
                          uint8_t m0, uint8_t* q) {
  StoredFit best{sc0, m0};
  float best_error = -1;
  float trial[kSub];
  for (int dsc = -1; dsc <= 1; ++dsc) {
    for (int dm = -1; dm <= 1; ++dm) {
      const int sc = sc0 + dsc, m = m0 + dm;
      if (sc < 0 || sc > kScaleLevels || m < 0 || m > kScaleLevels) continue;
      const float step = d * (float)sc, offset = dmin * (float)m;
      const float inv = step > 0 ? 1.0f / step : 0.0f;
      for (int i = 0; i < kSub; ++i) trial[i] = level_value((x[i] + offset) * inv, (float)levels);
      const float e = lane_sum([&](int i) {
        const float d = step * trial[i] - offset - x[i];
        return w[i] * d * d;
      });
      if (best_error < 0 || e < best_error) {
        best_error = e;
        best = {(uint8_t)sc, (uint8_t)m};
        for (int i = 0; i < kSub; ++i) q[i] = (uint8_t)trial[i];
      }
    }
  }
  return best;
}

// The common part of Q4_K and Q5_K: fits the 8 sub-blocks of x [256],
// stores d, dmin and the packed scales, and writes each element's level
// against the stored scales into q [256].
void quantize_super_block(const float* x, const ScaleSearch& s, uint16_t& d16, uint16_t& dmin16,
                          uint8_t* scales, uint8_t* q) {
  SubFit fits[kSubs];
  float w[kSub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + j * kSub;
    element_weights(xs, w);
    fits[j] = fit_sub_block(xs, w, s, q + j * kSub);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  const float inv_scale = max_scale > 0 ? (float)kScaleLevels / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? (float)kScaleLevels / max_min : 0.0f;
  d16 = fp32_to_fp16(max_scale / (float)kScaleLevels);
  dmin16 = fp32_to_fp16(max_min / (float)kScaleLevels);
  const float d = fp16_to_fp32(d16), dmin = fp16_to_fp32(dmin16);
  std::memset(scales, 0, 12);
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + j * kSub;
    element_weights(xs, w);
    const auto sc = (uint8_t)level_value(inv_scale * fits[j].scale, kScaleLevels);
    const auto m = (uint8_t)level_value(inv_min * fits[j].min, kScaleLevels);
    const StoredFit f = store_sub_block(xs, w, s.levels, d, dmin, sc, m, q + j * kSub);
    put_scale_min(j, f.sc, f.m, scales);
  }
}

void quantize_q4_k(const float* x, BlockQ4_K* out, int64_t nb) {
  uint8_t q[kQKK];
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    BlockQ4_K& blk = out[b];
    quantize_super_block(x, kQ4Search, blk.d, blk.dmin, blk.scales, q);
    // 4 chunks of 64: sub-block 2c in the low nibbles, 2c + 1 in the high.
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) blk.qs[32 * c + l] = (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* out, int64_t nb) {
  uint8_t q[kQKK];
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    BlockQ5_K& blk = out[b];
    quantize_super_block(x, kQ5Search, blk.d, blk.dmin, blk.scales, q);
    // As Q4_K for the low 4 bits; the fifth bit of element l of sub-block s is bit s of qh[l].
    std::memset(blk.qh, 0, sizeof(blk.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        blk.qs[32 * c + l] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
        blk.qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

}  // namespace

bool quantizable_k(DType type) { return type == DType::Q4_K || type == DType::Q5_K; }

void quantize_row_k(DType type, const float* x, void* dst, int64_t n) {
  if (n <= 0 || n % kQKK != 0) return;
  const int64_t nb = n / kQKK;
  if (type == DType::Q4_K) quantize_q4_k(x, static_cast<BlockQ4_K*>(dst), nb);
  if (type == DType::Q5_K) quantize_q5_k(x, static_cast<BlockQ5_K*>(dst), nb);
}

}  // namespace stride
