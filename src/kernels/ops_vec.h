#pragma once
// Internal to the ops kernels: the scalar tails, the AVX2 tanh approximation (Cephes-style
// polynomial, ~1-2 ulp) and widening sums; exp and the horizontal sums are
// the shared ones of kernels/simd/. Not a public interface.
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "kernels/simd/exp.h"
#include "kernels/simd/reduce.h"
#define STRIDE_OPS_AVX2 1
#endif

namespace stride::ops_detail {

inline constexpr double kSqrt2OverPi = 0.79788456080286535588;
inline constexpr double kGeluCoef = 0.044715;

// Scalar tails of the fast kernels (every path's), in float.
inline float silu_f(float x) { return x / (1.0f + std::exp(-x)); }
// 0.5 x (1 + tanh(u)) == x * sigmoid(2u): no cancellation for negative x.
inline float gelu_tanh_f(float x) {
  const float u = (float)kSqrt2OverPi * (x + (float)kGeluCoef * x * x * x);
  return x / (1.0f + std::exp(-2.0f * u));
}

// Rotation tails past the last vector group, from element `from` on (see
// ops_rope.cpp for the cs/sn layouts).
inline void rotate_adjacent_tail(float* v, const float* cs, const float* sn, int from, int rot_dim) {
  for (int j = from; j < rot_dim; j += 2) {
    const float x0 = v[j], x1 = v[j + 1];
    v[j] = x0 * cs[j] + x1 * sn[j];
    v[j + 1] = x1 * cs[j + 1] + x0 * sn[j + 1];
  }
}
inline void rotate_neox_tail(float* v, const float* cs, const float* sn, int from, int half) {
  for (int i = from; i < half; ++i) {
    const float lo = v[i], hi = v[i + half];
    v[i] = lo * cs[i] - hi * sn[i];
    v[i + half] = lo * sn[i] + hi * cs[i];
  }
}

// tanh's odd polynomial below kTanhSmall (highest power first); the exp
// form above. Shared by every vector width, so each gives the same bits.
inline constexpr float kTanhSmall = 0.625f;
inline constexpr float kTanhPoly[5] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                                       1.33314422036e-1f, -3.33332819422e-1f};

#ifdef STRIDE_OPS_AVX2

// tanh: odd polynomial near 0 (where 1 - 2/(e^2x+1) would cancel), exp form elsewhere.
inline __m256 tanh256(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 sign = _mm256_and_ps(x, sign_mask);
  const __m256 ax = _mm256_andnot_ps(sign_mask, x);
  // |x| < kTanhSmall
  const __m256 z = _mm256_mul_ps(ax, ax);
  __m256 p = _mm256_set1_ps(kTanhPoly[0]);
  for (int k = 1; k < 5; ++k) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kTanhPoly[k]));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), ax, ax);
  // |x| >= kTanhSmall
  const __m256 e = simd::exp_ps(_mm256_add_ps(ax, ax));
  const __m256 large = _mm256_sub_ps(
      _mm256_set1_ps(1.0f),
      _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(kTanhSmall), _CMP_LT_OQ);
  return _mm256_or_ps(_mm256_blendv_ps(large, small, is_small), sign);
}

// acc += (double) lanes of v, widened in two halves.
inline __m256d add_widened(__m256d acc, __m256 v) {
  acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

#endif  // STRIDE_OPS_AVX2

}  // namespace stride::ops_detail
