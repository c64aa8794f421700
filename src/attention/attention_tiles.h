#pragma once
// The inner loops of the paged attention kernel (internal to src/attention),
// written once for every KV storage type through a row loader
// (kernels/simd/loaders.h): f32 rows, f16 rows widened in registers, int8
// rows with a per-token scale. A tile of R query rows shares every load of a
// key or value row; R is 4, 2 or 1.
//   scores: s_r[t] = q_r . k[t]            (times ks[t] for int8 keys)
//   values: o_r = o_r * alpha_r + sum_t p_r[t] * v[t]
//           (for int8 values the caller folds vs[t] into p_r[t])
// Scalar references of each are in attention_tiles_ref.h.
//
// Every (row, key) score is summed in one order whatever tile computes it:
// one 8-wide FMA chain over the first d & ~7 elements, the hsum4 tree, then
// the scalar tail, then the scale. Every output element is o * alpha followed
// by one FMA per key in key order. The scalar tails use explicit fma: a
// product and a sum would be contracted or not depending on the loader
// inlined. So a row's result depends neither on how many rows shared its
// tile nor on how many keys its page held: otherwise logits would depend on
// how many tokens shared a prefill call.
//
// Included at the baseline (namespace stride::tiles: the tests) and by each
// attention kernel variant after isa/begin.h (namespace
// stride::isa::<target>::tiles), which adds 512-bit forms of the dot and
// value tiles from level 1 on. Those keep each lane's operations of the
// 256-bit tiles in the same order, so every score and output is
// bit-identical to theirs:
//   dot:   a register holds two keys (key j in the low 8 lanes, j + 1 in the
//          high 8) against the query's 8 elements in both halves; the halves
//          then go through the same hsum4 tree;
//   value: 16 consecutive columns per register, one FMA per key in order.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/simd/exp.h"
#include "kernels/simd/loaders.h"
#include "kernels/simd/reduce.h"

// Keys per pass of a dot tile and 8-column vectors per pass of a value tile:
// R x K (or R x V) accumulators plus the shared rows must fit the register
// file (16 ymm registers under AVX2, 32 under AVX-512VL).
#ifdef STRIDE_ISA_NS
namespace stride::isa::STRIDE_ISA_NS::tiles {
#define STRIDE_ATTN_TILES_WIDE (STRIDE_ISA_LEVEL >= 1)
inline constexpr int kQuadWidth = STRIDE_ISA_LEVEL >= 1 ? 4 : 2;
#else
namespace stride::tiles {
#define STRIDE_ATTN_TILES_WIDE 0
#ifdef __AVX512VL__
inline constexpr int kQuadWidth = 4;
#else
inline constexpr int kQuadWidth = 2;
#endif
#endif

constexpr int dot_keys(int rows) { return rows == 4 ? kQuadWidth : 4; }
constexpr int pv_vecs(int rows) { return rows == 4 ? kQuadWidth : 4; }

// out[i] = the hsum4-tree sum of a[i] for i < N. The tree is the same in every
// lane, so grouping the registers four at a time in any order is exact.
template <int N>
inline void lane_sums(const __m256* a, float* out) {
  constexpr int b = N & ~3;
  for (int i = 0; i < b; i += 4) _mm_storeu_ps(out + i, simd::hsum4(a[i], a[i + 1], a[i + 2], a[i + 3]));
  if constexpr (N % 4 != 0) {
    __m256 x[4];
    for (int j = 0; j < 4; ++j) x[j] = a[std::min(b + j, N - 1)];
    alignas(16) float t[4];
    _mm_store_ps(t, simd::hsum4(x[0], x[1], x[2], x[3]));
    for (int j = 0; j < N % 4; ++j) out[b + j] = t[j];
  }
}

// s_r[t + j] for rows r < R, keys j < K; k: [n, d] rows, ks: [n] (scaled rows only).
template <class L, int R, int K>
inline void dot_tile(const float* const* q, const typename L::Elem* k, const float* ks, int t,
                     int d, float* const* s) {
  const int d8 = d & ~7;
  const typename L::Elem* kt = k + (int64_t)t * d;
  __m256 a[R * K];  // [R, K]
  for (int j = 0; j < R * K; ++j) a[j] = _mm256_setzero_ps();
  for (int i = 0; i < d8; i += 8) {
    __m256 kv[K];
    for (int j = 0; j < K; ++j) {
      kv[j] = L::load8(kt + (int64_t)j * d + i);
      if constexpr (R > 1) __asm__("" : "+v"(kv[j]));  // in a register, not reloaded per row
    }
    for (int r = 0; r < R; ++r) {
      const __m256 qv = _mm256_loadu_ps(q[r] + i);
      for (int j = 0; j < K; ++j) a[r * K + j] = _mm256_fmadd_ps(qv, kv[j], a[r * K + j]);
    }
  }
  alignas(16) float sums[R * K];  // [R, K]
  lane_sums<R * K>(a, sums);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < K; ++j) {
      float v = sums[r * K + j];
      if (d8 < d) {
        const typename L::Elem* kj = kt + (int64_t)j * d;
        float tail = 0;
        for (int i = d8; i < d; ++i) tail = std::fma(q[r][i], L::at(kj, i), tail);
        v += tail;
      }
      if constexpr (L::kScaled) v *= ks[t + j];
      s[r][t + j] = v;
    }
}

#if STRIDE_ATTN_TILES_WIDE
// p[0..16) widened to f32 (exact, as L::load8 twice).
template <class L>
inline __m512 load16(const typename L::Elem* p) {
  using E = typename L::Elem;
  if constexpr (std::is_same_v<E, float>) {
    return _mm512_loadu_ps(p);
  } else if constexpr (std::is_same_v<E, uint16_t>) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
}

// a[0..8) in the low half, b[0..8) in the high half, widened to f32.
template <class L>
inline __m512 load8x2(const typename L::Elem* a, const typename L::Elem* b) {
  using E = typename L::Elem;
  if constexpr (std::is_same_v<E, float>) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(a)), _mm256_loadu_ps(b), 1);
  } else if constexpr (std::is_same_v<E, uint16_t>) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
  } else {
    const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a));
    const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_unpacklo_epi64(lo, hi)));
  }
}

// dot_tile<L, R, K> with key pairs in 512-bit registers; K even.
template <class L, int R, int K>
inline void dot_tile_wide(const float* const* q, const typename L::Elem* k, const float* ks, int t,
                          int d, float* const* s) {
  static_assert(K % 2 == 0);
  constexpr int P = K / 2;
  const int d8 = d & ~7;
  const typename L::Elem* kt = k + (int64_t)t * d;
  __m512 a[R * P];  // [R, P]: keys 2p (low half) and 2p + 1 (high half)
  for (int j = 0; j < R * P; ++j) a[j] = _mm512_setzero_ps();
  for (int i = 0; i < d8; i += 8) {
    __m512 kv[P];
    for (int j = 0; j < P; ++j) {
      kv[j] = load8x2<L>(kt + (int64_t)(2 * j) * d + i, kt + (int64_t)(2 * j + 1) * d + i);
      if constexpr (R > 1) __asm__("" : "+v"(kv[j]));  // in a register, not reloaded per row
    }
    for (int r = 0; r < R; ++r) {
      const __m512 qv = _mm512_broadcast_f32x8(_mm256_loadu_ps(q[r] + i));
      for (int j = 0; j < P; ++j) a[r * P + j] = _mm512_fmadd_ps(qv, kv[j], a[r * P + j]);
    }
  }
  __m256 h[R * K];  // [R, K], as dot_tile's accumulators
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < P; ++j) {
      h[r * K + 2 * j] = _mm512_castps512_ps256(a[r * P + j]);
      h[r * K + 2 * j + 1] = _mm512_extractf32x8_ps(a[r * P + j], 1);
    }
  alignas(16) float sums[R * K];
  lane_sums<R * K>(h, sums);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < K; ++j) {
      float v = sums[r * K + j];
      if (d8 < d) {
        const typename L::Elem* kj = kt + (int64_t)j * d;
        float tail = 0;
        for (int i = d8; i < d; ++i) tail = std::fma(q[r][i], L::at(kj, i), tail);
        v += tail;
      }
      if constexpr (L::kScaled) v *= ks[t + j];
      s[r][t + j] = v;
    }
}

// Columns [i, i + 16V) of pv_rows in 512-bit registers.
template <class L, int R, int V>
inline void pv_tile_wide(float* const* o, const float* alpha, const float* const* p,
                         const typename L::Elem* v, int n, int d, int i) {
  __m512 a[R][V];
  for (int r = 0; r < R; ++r) {
    const __m512 al = _mm512_set1_ps(alpha[r]);
    for (int j = 0; j < V; ++j) a[r][j] = _mm512_mul_ps(al, _mm512_loadu_ps(o[r] + i + 16 * j));
  }
  for (int t = 0; t < n; ++t) {
    const typename L::Elem* vt = v + (int64_t)t * d + i;
    __m512 vv[V];
    for (int j = 0; j < V; ++j) {
      vv[j] = load16<L>(vt + 16 * j);
      // Widened rows stay in a register (see pv_tile). f32 rows may be
      // folded into the FMAs: pinned, GCC spills them to the stack each key.
      if constexpr (R > 1 && !std::is_same_v<typename L::Elem, float>) __asm__("" : "+v"(vv[j]));
    }
    for (int r = 0; r < R; ++r) {
      const __m512 pt = _mm512_set1_ps(p[r][t]);
      for (int j = 0; j < V; ++j) a[r][j] = _mm512_fmadd_ps(pt, vv[j], a[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < V; ++j) _mm512_storeu_ps(o[r] + i + 16 * j, a[r][j]);
}

// simd::exp_ps on 16 lanes: the same operations per lane, so the same bits.
inline __m512 exp16(__m512 x) {
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(simd::kExpLo), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(simd::kExpLo)), _mm512_set1_ps(simd::kExpHi));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mov_ps((__mmask16)~underflow, _mm512_mul_ps(p, _mm512_castsi512_ps(e)));
}

// The 16-aligned part of exp_shift_sum: p[i] = exp(s[i] - m), summed into
// the 8-lane acc one half after the other, in the 256-bit loop's order.
// Returns the elements done.
inline int exp_shift_sum_wide(const float* s, float m, float* p, int n, __m256& acc) {
  const __m512 vm = _mm512_set1_ps(m);
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(s + i), vm));
    _mm512_storeu_ps(p + i, e);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
  }
  return i;
}
#endif  // STRIDE_ATTN_TILES_WIDE

// s_r[t] = q_r . k[t] (times ks[t] when scaled) for rows r < R, keys t < n.
// q: R rows of [d]; k: [n, d]; ks: [n] or null; s: R rows of [n].
template <class L, int R>
inline void dot_rows(const float* const* q, const typename L::Elem* k, const float* ks, int n,
                     int d, float* const* s) {
  constexpr int K = dot_keys(R);
  int t = 0;
#if STRIDE_ATTN_TILES_WIDE
  for (; t + K <= n; t += K) dot_tile_wide<L, R, K>(q, k, ks, t, d, s);
#endif
  for (; t + K <= n; t += K) dot_tile<L, R, K>(q, k, ks, t, d, s);
  for (; t < n; ++t) dot_tile<L, R, 1>(q, k, ks, t, d, s);
}

// Columns [i, i + 8V) of pv_rows; v: [n, d].
template <class L, int R, int V>
inline void pv_tile(float* const* o, const float* alpha, const float* const* p,
                    const typename L::Elem* v, int n, int d, int i) {
  __m256 a[R][V];
  for (int r = 0; r < R; ++r) {
    const __m256 al = _mm256_set1_ps(alpha[r]);
    for (int j = 0; j < V; ++j) a[r][j] = _mm256_mul_ps(al, _mm256_loadu_ps(o[r] + i + 8 * j));
  }
  for (int t = 0; t < n; ++t) {
    const typename L::Elem* vt = v + (int64_t)t * d + i;
    __m256 vv[V];
    for (int j = 0; j < V; ++j) {
      vv[j] = L::load8(vt + 8 * j);
      // Keep the row in a register: folded into each FMA, it would be loaded
      // (and widened) once per query row and the loop would be load-bound.
      if constexpr (R > 1) __asm__("" : "+v"(vv[j]));
    }
    for (int r = 0; r < R; ++r) {
      const __m256 pt = _mm256_set1_ps(p[r][t]);
      for (int j = 0; j < V; ++j) a[r][j] = _mm256_fmadd_ps(pt, vv[j], a[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < V; ++j) _mm256_storeu_ps(o[r] + i + 8 * j, a[r][j]);
}

// o_r = o_r * alpha_r + sum_t p_r[t] * v[t] for rows r < R. The outputs stay
// in registers across the keys, 8 * pv_vecs(R) columns at a time, then 8,
// then one. o: R rows of [d]; p: R rows of [n]; v: [n, d].
template <class L, int R>
inline void pv_rows(float* const* o, const float* alpha, const float* const* p,
                    const typename L::Elem* v, int n, int d) {
  constexpr int V = pv_vecs(R);
  int i = 0;
#if STRIDE_ATTN_TILES_WIDE
  for (; i + 16 * V <= d; i += 16 * V) pv_tile_wide<L, R, V>(o, alpha, p, v, n, d, i);
  for (; i + 16 <= d; i += 16) pv_tile_wide<L, R, 1>(o, alpha, p, v, n, d, i);
#endif
  for (; i + 8 * V <= d; i += 8 * V) pv_tile<L, R, V>(o, alpha, p, v, n, d, i);
  for (; i + 8 <= d; i += 8) pv_tile<L, R, 1>(o, alpha, p, v, n, d, i);
  for (; i < d; ++i)
    for (int r = 0; r < R; ++r) {
      float acc = o[r][i] * alpha[r];
      for (int t = 0; t < n; ++t) acc = std::fma(p[r][t], L::at(v + (int64_t)t * d, i), acc);
      o[r][i] = acc;
    }
}

// p[i] = exp(s[i] - m) for i < n; returns their sum.
inline float exp_shift_sum(const float* s, float m, float* p, int n) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
#if STRIDE_ATTN_TILES_WIDE
  i = exp_shift_sum_wide(s, m, p, n, acc);
#endif
  for (; i + 8 <= n; i += 8) {
    const __m256 e = simd::exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + i), vm));
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
    const __m256 e = simd::exp_ps(_mm256_loadu_ps(tmp_in));
    _mm256_storeu_ps(tmp_out, e);
    acc = _mm256_add_ps(acc, e);
    for (int j = 0; j < r; ++j) p[i + j] = tmp_out[j];
  }
  return simd::hsum(acc);
}

// max of s[0..n) (-inf when n == 0); exact in any order.
inline float row_max(const float* s, int n) {
  float mx = -INFINITY;
  int t = 0;
  if (n >= 8) {
    __m256 vm = _mm256_loadu_ps(s);
    for (t = 8; t + 8 <= n; t += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(s + t));
    mx = simd::hmax(vm);
  }
  for (; t < n; ++t) mx = std::max(mx, s[t]);
  return mx;
}

#undef STRIDE_ATTN_TILES_WIDE
}  // namespace
