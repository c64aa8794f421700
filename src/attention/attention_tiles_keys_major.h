#pragma once
// The score tile of a prefill page read keys-major: the page's keys
// transposed once to [d, ld] (transpose_keys), so one vector holds W
// consecutive keys' element i and a row's scores come out W keys to a
// register, with no horizontal sum per (row, key) as dot_rows needs.
//   scores: s_r[t] = q_r . k[t]   for f32 rows (f16 pages widened first)
//
// The bits are dot_rows': lane l of dot_rows' 8-wide accumulator is the FMA
// chain over elements l, l + 8, l + 16, ... in that order, and hsum4 adds the
// eight lanes as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). Here the
// chain of lane l runs on broadcast q_r[i] against the keys' row i of the
// transpose, in the same order, and the lanes are added in the same tree, one
// vector of keys at a time. So a row's score is the same whether its page
// went through this tile (prefill) or dot_rows (decode). Heads with d % 8 != 0
// have scalar tails in dot_rows and keep it.
//
// Included at the baseline (namespace stride::tiles: the tests, 8 keys to a
// ymm register) and by each attention kernel variant after isa/begin.h
// (namespace stride::isa::<target>::tiles), which reads 16 keys to a zmm
// register from level 1 on.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/simd/loaders.h"

#ifdef STRIDE_ISA_NS
namespace stride::isa::STRIDE_ISA_NS::tiles {
#define STRIDE_KEYS_MAJOR_WIDE (STRIDE_ISA_LEVEL >= 1)
#else
namespace stride::tiles {
#define STRIDE_KEYS_MAJOR_WIDE 0
#endif

// Keys per column block of the transpose: its leading dimension is a
// multiple of this, so every vector load of a row of keys stays inside it.
inline constexpr int kKeysMajorBlock = 16;

constexpr int keys_major_ld(int page_size) {
  return (page_size + kKeysMajorBlock - 1) / kKeysMajorBlock * kKeysMajorBlock;
}

// kt[i * ld + t] = k[t * d + i] widened to f32 for t < n, i < d, and 0 for
// n <= t < ld. k: [n, d] rows of a loader (f32, or f16 widened in registers)
// with d % 8 == 0; kt: [d, ld], ld = keys_major_ld(>= n).
template <class L>
inline void transpose_keys(const typename L::Elem* k, int n, int d, float* kt, int ld) {
  for (int t0 = 0; t0 < ld; t0 += 8)
    for (int i0 = 0; i0 < d; i0 += 8) {
      __m256 r[8];  // keys t0..t0+8, elements i0..i0+8
      for (int j = 0; j < 8; ++j)
        r[j] = t0 + j < n ? L::load8(k + (int64_t)(t0 + j) * d + i0) : _mm256_setzero_ps();
      const __m256 a0 = _mm256_unpacklo_ps(r[0], r[1]), a1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 a2 = _mm256_unpacklo_ps(r[2], r[3]), a3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 a4 = _mm256_unpacklo_ps(r[4], r[5]), a5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 a6 = _mm256_unpacklo_ps(r[6], r[7]), a7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xEE);
      const __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xEE);
      const __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xEE);
      const __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xEE);
      const __m256 c[8] = {_mm256_permute2f128_ps(b0, b4, 0x20), _mm256_permute2f128_ps(b1, b5, 0x20),
                           _mm256_permute2f128_ps(b2, b6, 0x20), _mm256_permute2f128_ps(b3, b7, 0x20),
                           _mm256_permute2f128_ps(b0, b4, 0x31), _mm256_permute2f128_ps(b1, b5, 0x31),
                           _mm256_permute2f128_ps(b2, b6, 0x31), _mm256_permute2f128_ps(b3, b7, 0x31)};
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(kt + (int64_t)(i0 + j) * ld + t0, c[j]);
    }
}

// W consecutive keys per register.
struct KeysYmm {
  using T = __m256;
  static constexpr int W = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static void store(float* p, T a) { _mm256_storeu_ps(p, a); }
};

#if STRIDE_KEYS_MAJOR_WIDE
struct KeysZmm {
  using T = __m512;
  static constexpr int W = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T bcast(const float* p) { return _mm512_set1_ps(*p); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static void store(float* p, T a) { _mm512_storeu_ps(p, a); }
};
using KeysVec = KeysZmm;
#else
using KeysVec = KeysYmm;
#endif

// (lane l) + (lane l + 1) of keys [t, t + W) for rows r < R: 2R independent FMA chains.
template <class V, int R>
inline void lane_pair(const float* const* q, const float* kt, int ld, int t, int d, int l,
                      typename V::T* out) {
  using T = typename V::T;
  T a[R], b[R];
  for (int r = 0; r < R; ++r) a[r] = b[r] = V::zero();
  for (int i = l; i < d; i += 8) {
    const T ka = V::load(kt + (int64_t)i * ld + t);
    const T kb = V::load(kt + (int64_t)(i + 1) * ld + t);
    for (int r = 0; r < R; ++r) {
      a[r] = V::fma(V::bcast(q[r] + i), ka, a[r]);
      b[r] = V::fma(V::bcast(q[r] + i + 1), kb, b[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = V::add(a[r], b[r]);
}

// Scores of keys [t, t + W) for rows r < R, in hsum4's tree; written to
// s_r[t..t + m), m <= W.
template <class V, int R>
inline void keys_major_vec(const float* const* q, const float* kt, int ld, int t, int d, int m,
                           float* const* s) {
  using T = typename V::T;
  T x[R], y[R], lo[R];
  lane_pair<V, R>(q, kt, ld, t, d, 0, x);
  lane_pair<V, R>(q, kt, ld, t, d, 2, y);
  for (int r = 0; r < R; ++r) lo[r] = V::add(x[r], y[r]);
  lane_pair<V, R>(q, kt, ld, t, d, 4, x);
  lane_pair<V, R>(q, kt, ld, t, d, 6, y);
  for (int r = 0; r < R; ++r) {
    const T sum = V::add(lo[r], V::add(x[r], y[r]));
    if (m == V::W) {
      V::store(s[r] + t, sum);
    } else {
      alignas(64) float tmp[V::W];
      V::store(tmp, sum);
      std::copy(tmp, tmp + m, s[r] + t);
    }
  }
}

// s_r[t] = q_r . k[t] for rows r < R, keys t < n, from kt = transpose_keys(k):
// the bits of dot_rows<F32Rows, R>. q: R rows of [d], d % 8 == 0; s: R rows of [n].
template <int R>
inline void dot_rows_keys_major(const float* const* q, const float* kt, int ld, int n, int d,
                                float* const* s) {
  for (int t = 0; t < n; t += KeysVec::W)
    keys_major_vec<KeysVec, R>(q, kt, ld, t, d, std::min(KeysVec::W, n - t), s);
}

#undef STRIDE_KEYS_MAJOR_WIDE
}  // namespace
