#pragma once
// Internal to the ops kernels: the scalar tails and the constants that every
// vector width shares (the kernels: isa/ops.cpp, over isa/vec.h); exp and the
// horizontal sums are the shared ones of kernels/simd/. Not a public interface.
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

}  // namespace stride::ops_detail
