#pragma once
// Horizontal reductions of AVX2 registers, shared by every kernel (ops,
// matmul, attention). Each has one fixed summation tree: kernels that must
// agree bit for bit (the attention row tiles) rely on using the same one.
#include <immintrin.h>

namespace stride::simd {

// sum of the 8 lanes: ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)).
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Four sums at once: {sum(a), sum(b), sum(c), sum(d)}. Each lane uses the tree
// ((x0+x1) + (x2+x3)) + ((x4+x5) + (x6+x7)) whatever its position, so which
// registers share a call never changes a result.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// sum of the 4 double lanes.
inline double hsum_pd(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}

// max of the 8 lanes (exact in any order).
inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

}  // namespace stride::simd
