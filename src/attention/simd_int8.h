#pragma once
// AVX2 helpers of the attention kernel for int8 KV pages (internal to
// src/attention): keys and values are widened to f32 in registers, never
// written back dequantized. Each has a scalar *_ref beside it for the tests.
//   keys:   s[t] = ks[t] * (q . k8[t])   (per-token scale after the dot)
//   values: o = o * alpha + sum_t p[t] * v8[t], where the caller has folded
//           the per-token value scale into p[t]
#include <immintrin.h>

#include <cstdint>

#include "attention/simd.h"

namespace stride::simd {

// Eight int8 -> eight f32.
inline __m256 load_i8x8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}

// q . k (unscaled), k int8, in the order of the four-key loops below (see
// dot_in_row_order in simd.h).
inline float dot_i8(const float* q, const int8_t* k, int d) { return dot_in_row_order(q, k, d, load_i8x8); }

// s[t] = ks[t] * (q . k[t]) for t < n; k: [n, d] int8, ks: [n].
inline void dot_rows_i8(const float* q, const int8_t* k, const float* ks, int n, int d, float* s) {
  int t = 0;
  const int d8 = d & ~7;
  for (; t + 4 <= n; t += 4) {
    const int8_t* k0 = k + (int64_t)t * d;
    const int8_t* k1 = k0 + d;
    const int8_t* k2 = k1 + d;
    const int8_t* k3 = k2 + d;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < d8; i += 8) {
      const __m256 qv = _mm256_loadu_ps(q + i);
      a0 = _mm256_fmadd_ps(qv, load_i8x8(k0 + i), a0);
      a1 = _mm256_fmadd_ps(qv, load_i8x8(k1 + i), a1);
      a2 = _mm256_fmadd_ps(qv, load_i8x8(k2 + i), a2);
      a3 = _mm256_fmadd_ps(qv, load_i8x8(k3 + i), a3);
    }
    __m128 r = hsum4(a0, a1, a2, a3);
    if (d8 < d) {
      float tail[4] = {0, 0, 0, 0};
      for (int j = 0; j < 4; ++j)
        for (int i = d8; i < d; ++i) tail[j] += q[i] * (float)k0[(int64_t)j * d + i];
      r = _mm_add_ps(r, _mm_loadu_ps(tail));
    }
    _mm_storeu_ps(s + t, _mm_mul_ps(r, _mm_loadu_ps(ks + t)));
  }
  for (; t < n; ++t) s[t] = ks[t] * dot_i8(q, k + (int64_t)t * d, d);
}

// dot_rows_i8 for two query rows: each widened key feeds two FMAs.
inline void dot_rows_i8_x2(const float* qa, const float* qb, const int8_t* k, const float* ks,
                           int n, int d, float* sa, float* sb) {
  int t = 0;
  const int d8 = d & ~7;
  for (; t + 4 <= n; t += 4) {
    const int8_t* k0 = k + (int64_t)t * d;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int i = 0; i < d8; i += 8) {
      const __m256 qav = _mm256_loadu_ps(qa + i), qbv = _mm256_loadu_ps(qb + i);
      const __m256 kv0 = load_i8x8(k0 + i), kv1 = load_i8x8(k0 + d + i);
      const __m256 kv2 = load_i8x8(k0 + 2 * d + i), kv3 = load_i8x8(k0 + 3 * d + i);
      a0 = _mm256_fmadd_ps(qav, kv0, a0);
      a1 = _mm256_fmadd_ps(qav, kv1, a1);
      a2 = _mm256_fmadd_ps(qav, kv2, a2);
      a3 = _mm256_fmadd_ps(qav, kv3, a3);
      b0 = _mm256_fmadd_ps(qbv, kv0, b0);
      b1 = _mm256_fmadd_ps(qbv, kv1, b1);
      b2 = _mm256_fmadd_ps(qbv, kv2, b2);
      b3 = _mm256_fmadd_ps(qbv, kv3, b3);
    }
    __m128 ra = hsum4(a0, a1, a2, a3), rb = hsum4(b0, b1, b2, b3);
    if (d8 < d) {
      float ta[4] = {0, 0, 0, 0}, tb[4] = {0, 0, 0, 0};
      for (int j = 0; j < 4; ++j)
        for (int i = d8; i < d; ++i) {
          ta[j] += qa[i] * (float)k0[(int64_t)j * d + i];
          tb[j] += qb[i] * (float)k0[(int64_t)j * d + i];
        }
      ra = _mm_add_ps(ra, _mm_loadu_ps(ta));
      rb = _mm_add_ps(rb, _mm_loadu_ps(tb));
    }
    const __m128 sc = _mm_loadu_ps(ks + t);
    _mm_storeu_ps(sa + t, _mm_mul_ps(ra, sc));
    _mm_storeu_ps(sb + t, _mm_mul_ps(rb, sc));
  }
  for (; t < n; ++t) {
    sa[t] = ks[t] * dot_i8(qa, k + (int64_t)t * d, d);
    sb[t] = ks[t] * dot_i8(qb, k + (int64_t)t * d, d);
  }
}

// o = o * alpha + sum_t p[t] * v[t] over columns [from, d); v: [n, d] int8.
inline void pv_accumulate_i8_cols(float* o, float alpha, const float* p, const int8_t* v, int n,
                                  int d, int from) {
  const __m256 va = _mm256_set1_ps(alpha);
  int i = from;
  for (; i + 8 <= d; i += 8) {
    __m256 o0 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i));
    for (int t = 0; t < n; ++t)
      o0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), load_i8x8(v + (int64_t)t * d + i), o0);
    _mm256_storeu_ps(o + i, o0);
  }
  for (; i < d; ++i) {
    float acc = o[i] * alpha;
    for (int t = 0; t < n; ++t) acc += p[t] * (float)v[(int64_t)t * d + i];
    o[i] = acc;
  }
}

// o = o * alpha + sum_t p[t] * v[t]; 32 columns stay in registers across the keys.
inline void pv_accumulate_i8(float* o, float alpha, const float* p, const int8_t* v, int n, int d) {
  const __m256 va = _mm256_set1_ps(alpha);
  int i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256 o0 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i));
    __m256 o1 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i + 8));
    __m256 o2 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i + 16));
    __m256 o3 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i + 24));
    for (int t = 0; t < n; ++t) {
      const __m256 pt = _mm256_set1_ps(p[t]);
      const int8_t* vt = v + (int64_t)t * d + i;
      o0 = _mm256_fmadd_ps(pt, load_i8x8(vt), o0);
      o1 = _mm256_fmadd_ps(pt, load_i8x8(vt + 8), o1);
      o2 = _mm256_fmadd_ps(pt, load_i8x8(vt + 16), o2);
      o3 = _mm256_fmadd_ps(pt, load_i8x8(vt + 24), o3);
    }
    _mm256_storeu_ps(o + i, o0);
    _mm256_storeu_ps(o + i + 8, o1);
    _mm256_storeu_ps(o + i + 16, o2);
    _mm256_storeu_ps(o + i + 24, o3);
  }
  pv_accumulate_i8_cols(o, alpha, p, v, n, d, i);
}

// pv_accumulate_i8 for two rows sharing every widened value.
inline void pv_accumulate_i8_x2(float* oa, float* ob, float alpha_a, float alpha_b, const float* pa,
                                const float* pb, const int8_t* v, int n, int d) {
  const __m256 vaa = _mm256_set1_ps(alpha_a), vab = _mm256_set1_ps(alpha_b);
  int i = 0;
  for (; i + 16 <= d; i += 16) {
    __m256 a0 = _mm256_mul_ps(vaa, _mm256_loadu_ps(oa + i));
    __m256 a1 = _mm256_mul_ps(vaa, _mm256_loadu_ps(oa + i + 8));
    __m256 b0 = _mm256_mul_ps(vab, _mm256_loadu_ps(ob + i));
    __m256 b1 = _mm256_mul_ps(vab, _mm256_loadu_ps(ob + i + 8));
    for (int t = 0; t < n; ++t) {
      const __m256 pta = _mm256_set1_ps(pa[t]), ptb = _mm256_set1_ps(pb[t]);
      const int8_t* vt = v + (int64_t)t * d + i;
      const __m256 v0 = load_i8x8(vt), v1 = load_i8x8(vt + 8);
      a0 = _mm256_fmadd_ps(pta, v0, a0);
      a1 = _mm256_fmadd_ps(pta, v1, a1);
      b0 = _mm256_fmadd_ps(ptb, v0, b0);
      b1 = _mm256_fmadd_ps(ptb, v1, b1);
    }
    _mm256_storeu_ps(oa + i, a0);
    _mm256_storeu_ps(oa + i + 8, a1);
    _mm256_storeu_ps(ob + i, b0);
    _mm256_storeu_ps(ob + i + 8, b1);
  }
  if (i < d) {  // remaining columns, one row at a time
    pv_accumulate_i8_cols(oa, alpha_a, pa, v, n, d, i);
    pv_accumulate_i8_cols(ob, alpha_b, pb, v, n, d, i);
  }
}

// Scalar references of the above.
inline void dot_rows_i8_ref(const float* q, const int8_t* k, const float* ks, int n, int d,
                            float* s) {
  for (int t = 0; t < n; ++t) {
    double acc = 0;
    for (int i = 0; i < d; ++i) acc += (double)q[i] * k[(int64_t)t * d + i];
    s[t] = (float)(acc * ks[t]);
  }
}

inline void pv_accumulate_i8_ref(float* o, float alpha, const float* p, const int8_t* v, int n,
                                 int d) {
  for (int i = 0; i < d; ++i) {
    double acc = (double)o[i] * alpha;
    for (int t = 0; t < n; ++t) acc += (double)p[t] * v[(int64_t)t * d + i];
    o[i] = (float)acc;
  }
}

}  // namespace stride::simd
