#pragma once
// AVX2/F16C/FMA helpers of the attention kernel (internal to src/attention).
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "core/fp16.h"

namespace stride::simd {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float dot(const float* a, const float* b, int n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8)
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Four horizontal sums at once: {sum(a), sum(b), sum(c), sum(d)}.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// q . k summed in exactly the order of the four-key loops below (one 8-wide
// FMA chain, lane 0 of the hsum4 tree, then the scalar tail), for the keys
// left over after them. A row's scores must not depend on which micro-kernel
// (x4, x2 or single rows) it went through, nor on how many keys a page has:
// that would make logits depend on how many tokens share a prefill call.
// `load8` widens 8 keys to f32 (f32 keys, or int8 ones in simd_int8.h).
template <class K, class Load8>
inline float dot_in_row_order(const float* q, const K* k, int d, Load8 load8) {
  const int d8 = d & ~7;
  __m256 a = _mm256_setzero_ps();
  for (int i = 0; i < d8; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k + i), a);
  float r = _mm_cvtss_f32(hsum4(a, a, a, a));
  if (d8 < d) {
    float tail = 0;
    for (int i = d8; i < d; ++i) tail += q[i] * (float)k[i];
    r += tail;
  }
  return r;
}

inline float dot_key(const float* q, const float* k, int d) {
  return dot_in_row_order(q, k, d, [](const float* p) { return _mm256_loadu_ps(p); });
}

// s[t] = q . k[t] for t < n; k: [n, d]. Four keys per pass keep four
// independent FMA chains in flight and share each load of q.
inline void dot_rows(const float* q, const float* k, int n, int d, float* s) {
  int t = 0;
  const int d8 = d & ~7;
  for (; t + 4 <= n; t += 4) {
    const float* k0 = k + (int64_t)t * d;
    const float* k1 = k0 + d;
    const float* k2 = k1 + d;
    const float* k3 = k2 + d;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < d8; i += 8) {
      const __m256 qv = _mm256_loadu_ps(q + i);
      a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + i), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + i), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + i), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + i), a3);
    }
    __m128 r = hsum4(a0, a1, a2, a3);
    if (d8 < d) {
      float tail[4] = {0, 0, 0, 0};
      for (int i = d8; i < d; ++i) {
        tail[0] += q[i] * k0[i];
        tail[1] += q[i] * k1[i];
        tail[2] += q[i] * k2[i];
        tail[3] += q[i] * k3[i];
      }
      r = _mm_add_ps(r, _mm_loadu_ps(tail));
    }
    _mm_storeu_ps(s + t, r);
  }
  for (; t < n; ++t) s[t] = dot_key(q, k + (int64_t)t * d, d);
}

// pv_accumulate restricted to columns [from, d): 8 at a time, then scalar.
inline void pv_accumulate_cols(float* o, float alpha, const float* p, const float* v, int n, int d,
                               int from) {
  const __m256 va = _mm256_set1_ps(alpha);
  int i = from;
  for (; i + 8 <= d; i += 8) {
    __m256 o0 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i));
    for (int t = 0; t < n; ++t)
      o0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), _mm256_loadu_ps(v + (int64_t)t * d + i), o0);
    _mm256_storeu_ps(o + i, o0);
  }
  for (; i < d; ++i) {
    float acc = o[i] * alpha;
    for (int t = 0; t < n; ++t) acc += p[t] * v[(int64_t)t * d + i];
    o[i] = acc;
  }
}

// dot_rows for two query rows at once: each key load feeds two FMAs.
inline void dot_rows_x2(const float* qa, const float* qb, const float* k, int n, int d, float* sa,
                        float* sb) {
  int t = 0;
  const int d8 = d & ~7;
  for (; t + 4 <= n; t += 4) {
    const float* k0 = k + (int64_t)t * d;
    const float* k1 = k0 + d;
    const float* k2 = k1 + d;
    const float* k3 = k2 + d;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int i = 0; i < d8; i += 8) {
      const __m256 qav = _mm256_loadu_ps(qa + i), qbv = _mm256_loadu_ps(qb + i);
      const __m256 kv0 = _mm256_loadu_ps(k0 + i), kv1 = _mm256_loadu_ps(k1 + i);
      const __m256 kv2 = _mm256_loadu_ps(k2 + i), kv3 = _mm256_loadu_ps(k3 + i);
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
          ta[j] += qa[i] * k0[(int64_t)j * d + i];
          tb[j] += qb[i] * k0[(int64_t)j * d + i];
        }
      ra = _mm_add_ps(ra, _mm_loadu_ps(ta));
      rb = _mm_add_ps(rb, _mm_loadu_ps(tb));
    }
    _mm_storeu_ps(sa + t, ra);
    _mm_storeu_ps(sb + t, rb);
  }
  for (; t < n; ++t) {
    sa[t] = dot_key(qa, k + (int64_t)t * d, d);
    sb[t] = dot_key(qb, k + (int64_t)t * d, d);
  }
}

// pv_accumulate for two rows sharing every load of v.
inline void pv_accumulate_x2(float* oa, float* ob, float alpha_a, float alpha_b, const float* pa,
                             const float* pb, const float* v, int n, int d) {
  const __m256 vaa = _mm256_set1_ps(alpha_a), vab = _mm256_set1_ps(alpha_b);
  int i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256 a0 = _mm256_mul_ps(vaa, _mm256_loadu_ps(oa + i));
    __m256 a1 = _mm256_mul_ps(vaa, _mm256_loadu_ps(oa + i + 8));
    __m256 a2 = _mm256_mul_ps(vaa, _mm256_loadu_ps(oa + i + 16));
    __m256 a3 = _mm256_mul_ps(vaa, _mm256_loadu_ps(oa + i + 24));
    __m256 b0 = _mm256_mul_ps(vab, _mm256_loadu_ps(ob + i));
    __m256 b1 = _mm256_mul_ps(vab, _mm256_loadu_ps(ob + i + 8));
    __m256 b2 = _mm256_mul_ps(vab, _mm256_loadu_ps(ob + i + 16));
    __m256 b3 = _mm256_mul_ps(vab, _mm256_loadu_ps(ob + i + 24));
    for (int t = 0; t < n; ++t) {
      const __m256 pta = _mm256_set1_ps(pa[t]), ptb = _mm256_set1_ps(pb[t]);
      const float* vt = v + (int64_t)t * d + i;
      const __m256 v0 = _mm256_loadu_ps(vt), v1 = _mm256_loadu_ps(vt + 8);
      const __m256 v2 = _mm256_loadu_ps(vt + 16), v3 = _mm256_loadu_ps(vt + 24);
      a0 = _mm256_fmadd_ps(pta, v0, a0);
      a1 = _mm256_fmadd_ps(pta, v1, a1);
      a2 = _mm256_fmadd_ps(pta, v2, a2);
      a3 = _mm256_fmadd_ps(pta, v3, a3);
      b0 = _mm256_fmadd_ps(ptb, v0, b0);
      b1 = _mm256_fmadd_ps(ptb, v1, b1);
      b2 = _mm256_fmadd_ps(ptb, v2, b2);
      b3 = _mm256_fmadd_ps(ptb, v3, b3);
    }
    _mm256_storeu_ps(oa + i, a0);
    _mm256_storeu_ps(oa + i + 8, a1);
    _mm256_storeu_ps(oa + i + 16, a2);
    _mm256_storeu_ps(oa + i + 24, a3);
    _mm256_storeu_ps(ob + i, b0);
    _mm256_storeu_ps(ob + i + 8, b1);
    _mm256_storeu_ps(ob + i + 16, b2);
    _mm256_storeu_ps(ob + i + 24, b3);
  }
  if (i < d) {  // remaining columns, one row at a time
    pv_accumulate_cols(oa, alpha_a, pa, v, n, d, i);
    pv_accumulate_cols(ob, alpha_b, pb, v, n, d, i);
  }
}

// o = o * alpha + sum_t p[t] * v[t]; v: [n, d]. The output stays in registers
// across the keys, 32 columns at a time.
inline void pv_accumulate(float* o, float alpha, const float* p, const float* v, int n, int d) {
  const __m256 va = _mm256_set1_ps(alpha);
  int i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256 o0 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i));
    __m256 o1 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i + 8));
    __m256 o2 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i + 16));
    __m256 o3 = _mm256_mul_ps(va, _mm256_loadu_ps(o + i + 24));
    for (int t = 0; t < n; ++t) {
      const __m256 pt = _mm256_set1_ps(p[t]);
      const float* vt = v + (int64_t)t * d + i;
      o0 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt), o0);
      o1 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt + 8), o1);
      o2 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt + 16), o2);
      o3 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt + 24), o3);
    }
    _mm256_storeu_ps(o + i, o0);
    _mm256_storeu_ps(o + i + 8, o1);
    _mm256_storeu_ps(o + i + 16, o2);
    _mm256_storeu_ps(o + i + 24, o3);
  }
  pv_accumulate_cols(o, alpha, p, v, n, d, i);
}

inline void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + i))));
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

// expf (Cephes polynomial, ~1 ulp); 0 for x below -87.3, so masked -inf gives 0.
inline __m256 exp_ps(__m256 x) {
  const __m256 zero_mask = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.f)));
  __m256i e = _mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127));
  e = _mm256_slli_epi32(e, 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_and_ps(y, zero_mask);
}

// p[i] = exp(s[i] - m); returns the sum.
inline float exp_shift_sum(const float* s, float m, float* p, int n) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + i), vm));
    _mm256_storeu_ps(p + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  // The tail joins the vector sum as a zero-padded vector (exp(-inf) = 0): a
  // page of n valid keys then sums exactly like a longer page whose extra keys
  // are masked, so the denominator does not depend on how many keys the
  // page held when the row was computed (prefill chunking, decode).
  if (i < n) {
    float tmp_in[8], tmp_out[8];
    const int r = n - i;
    for (int j = 0; j < 8; ++j) tmp_in[j] = j < r ? s[i + j] - m : -INFINITY;
    const __m256 e = exp_ps(_mm256_loadu_ps(tmp_in));
    _mm256_storeu_ps(tmp_out, e);
    acc = _mm256_add_ps(acc, e);
    for (int j = 0; j < r; ++j) p[i + j] = tmp_out[j];
  }
  return hsum(acc);
}

}  // namespace stride::simd
