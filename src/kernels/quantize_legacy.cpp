#include "kernels/quantize_legacy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant_blocks.h"

namespace stride {
namespace {

using namespace quant;

// Candidate grids per end of the level range: the block's largest magnitude
// maps onto (half + first + k * spacing) steps, k = 0..steps.
constexpr float kFirst = -0.6f;
constexpr float kSpacing = 0.2f;
constexpr int kSteps = 5;

// Sums over a block in 8 interleaved partial sums, so that the compiler
// vectorizes them. term(i) is the i-th element's addend.
template <typename Term>
float lane_sum(const Term& term) {
  float acc[8] = {};
  for (int i = 0; i < kQK; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += term(i + j);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// v rounded to the nearest integer in [lo, hi], as a float (ties to even:
// adding 1.5 * 2^23 drops the fraction; no libm call, so the loops vectorize).
float level_value(float v, float lo, float hi) {
  const float c = std::clamp(v, lo, hi);
  return (c + 12582912.0f) - 12582912.0f;
}

// The weight of each element's squared error: larger values weigh more, as
// their error moves a dot product more.
void element_weights(const float* x, float* w) {
  const float rms = std::sqrt(lane_sum([&](int i) { return x[i] * x[i]; }) / kQK);
  for (int i = 0; i < kQK; ++i) w[i] = rms + std::fabs(x[i]);
}

// The scale d of x ~= d * l, l signed levels in [-half, half - 1], of the
// least weighted squared error over the candidate grids.
float fit_scale(const float* x, const float* w, int half) {
  float peak = 0;  // the element of largest magnitude, with its sign
  for (int i = 0; i < kQK; ++i)
    if (std::fabs(x[i]) > std::fabs(peak)) peak = x[i];
  if (peak == 0) return 0;
  const float lo = (float)-half, hi = (float)(half - 1);
  const float swx2 = lane_sum([&](int i) { return w[i] * x[i] * x[i]; });
  float best_d = -peak / (float)half, best_error = -1;  // the plain grid: peak at level -half
  float l[kQK];
  // side 0: the peak near level -half; side 1: near level half - 1.
  for (int side = 0; side < 2; ++side) {
    const float top = side == 0 ? -(float)half : (float)(half - 1);
    for (int k = 0; k <= kSteps; ++k) {
      const float reach = top + (side == 0 ? -1.0f : 1.0f) * (kFirst + kSpacing * (float)k);
      const float inv = reach / peak;
      for (int i = 0; i < kQK; ++i) l[i] = level_value(inv * x[i], lo, hi);
      const float swxl = lane_sum([&](int i) { return w[i] * x[i] * l[i]; });
      const float swl2 = lane_sum([&](int i) { return w[i] * l[i] * l[i]; });
      if (!(swl2 > 0)) continue;
      const float d = swxl / swl2;
      // sum w (d l - x)^2 at the least-squares d, in double: the terms nearly cancel.
      const float e = (float)((double)swx2 - (double)swxl * swxl / swl2);
      if (best_error < 0 || e < best_error) {
        best_error = e;
        best_d = d;
      }
    }
  }
  return best_d;
}

// Stores the block's fp16 scale and returns each element's level in
// 0..2 * half - 1 against the stored scale, in q [32].
uint16_t quantize_block(const float* x, int half, uint8_t* q) {
  float w[kQK];
  element_weights(x, w);
  const uint16_t d16 = fp32_to_fp16(fit_scale(x, w, half));
  const float d = fp16_to_fp32(d16);
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK; ++i) q[i] = (uint8_t)(level_value(inv * x[i], (float)-half, (float)(half - 1)) + (float)half);
  return d16;
}

void quantize_q4_0(const float* x, BlockQ4_0* out, int64_t nb) {
  uint8_t q[kQK];
  for (int64_t b = 0; b < nb; ++b, x += kQK) {
    out[b].d = quantize_block(x, 8, q);
    for (int j = 0; j < kQK / 2; ++j) out[b].qs[j] = (uint8_t)(q[j] | (q[j + kQK / 2] << 4));
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* out, int64_t nb) {
  uint8_t q[kQK];
  for (int64_t b = 0; b < nb; ++b, x += kQK) {
    out[b].d = quantize_block(x, 16, q);
    uint32_t high = 0;  // bit j: the fifth bit of element j
    for (int j = 0; j < kQK; ++j) high |= (uint32_t)(q[j] >> 4) << j;
    for (int j = 0; j < 4; ++j) out[b].qh[j] = (uint8_t)(high >> (8 * j));
    for (int j = 0; j < kQK / 2; ++j) out[b].qs[j] = (uint8_t)((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
  }
}

}  // namespace

bool quantizable_legacy(DType type) { return type == DType::Q4_0 || type == DType::Q5_0; }

void quantize_row_legacy(DType type, const float* x, void* dst, int64_t n) {
  if (n <= 0 || n % kQK != 0) return;
  const int64_t nb = n / kQK;
  if (type == DType::Q4_0) quantize_q4_0(x, static_cast<BlockQ4_0*>(dst), nb);
  if (type == DType::Q5_0) quantize_q5_0(x, static_cast<BlockQ5_0*>(dst), nb);
}

}  // namespace stride
