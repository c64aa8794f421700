#pragma once
// The float vector of a kernel variant's target, as one traits type `Vec`
// (8 lanes on AVX2, 16 on AVX-512), so that a kernel written once over Vec
// compiles to each target's width (isa/ops.cpp). Lanes are walked in groups:
// whole Vec::kWidth groups, then on AVX-512 one masked 8-lane group where
// the AVX2 kernel has its last group, so every path leaves the same scalar
// tail and each lane sees the same operations. The reductions keep each
// path's own summation tree. For kernel variants: include after isa/begin.h.
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/exp.h"
#include "kernels/simd/reduce.h"

#if STRIDE_ISA_LEVEL >= 1
#include "kernels/isa/exp16.h"
#endif

namespace stride::isa::STRIDE_ISA_NS {

#if STRIDE_ISA_LEVEL == 0

struct Vec {
  using F = __m256;
  struct Mask {};  // every group is whole
  static constexpr int kWidth = 8;

  // f(i, mask) over whole groups of [from, n); returns where the tail starts.
  template <typename Fn>
  static int64_t for_groups(int64_t from, int64_t n, Fn&& f) {
    int64_t i = from;
    for (; i + 8 <= n; i += 8) f(i, Mask{});
    return i;
  }

  static F load(Mask, const float* p) { return _mm256_loadu_ps(p); }
  static void store(Mask, float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F and_(F a, F b) { return _mm256_and_ps(a, b); }
  static F andnot(F a, F b) { return _mm256_andnot_ps(a, b); }
  static F or_(F a, F b) { return _mm256_or_ps(a, b); }
  static F xor_(F a, F b) { return _mm256_xor_ps(a, b); }
  static F exp(F x) { return simd::exp_ps(x); }
  // a < b ? if_lt : otherwise, per lane.
  static F select_lt(F a, F b, F if_lt, F otherwise) {
    return _mm256_blendv_ps(otherwise, if_lt, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
  }
  // (1,0,3,2) within each 128-bit lane: the partner of an adjacent pair.
  static F swap_pairs(F a) { return _mm256_permute_ps(a, 0xB1); }

  // Softmax's max: the first 8 elements seed it (x has at least 8), the
  // groups from 8 on fold in; exact in any order.
  static F max_seed(const float* x, int64_t& from) {
    from = 8;
    return _mm256_loadu_ps(x);
  }
  static F max(Mask, F acc, F v) { return _mm256_max_ps(acc, v); }
  static float hmax(F v) { return simd::hmax(v); }

  // acc += (double) lanes of v, widened in two halves.
  static __m256d add_widened(__m256d acc, F v, Mask) {
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }

  // Sum of squares in f64, 16 elements a step: two 4-lane accumulators, one
  // for each 128-bit half of the 8-element vectors.
  struct SquareSum {
    __m256d lo, hi;
  };
  static SquareSum no_squares() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  static void add_squares16(SquareSum& s, const float* p) {
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    __m256d d;
    d = _mm256_cvtps_pd(_mm256_castps256_ps128(a));
    s.lo = _mm256_fmadd_pd(d, d, s.lo);
    d = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
    s.hi = _mm256_fmadd_pd(d, d, s.hi);
    d = _mm256_cvtps_pd(_mm256_castps256_ps128(b));
    s.lo = _mm256_fmadd_pd(d, d, s.lo);
    d = _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1));
    s.hi = _mm256_fmadd_pd(d, d, s.hi);
  }
  static double total(const SquareSum& s) { return simd::hsum_pd(_mm256_add_pd(s.lo, s.hi)); }
};

#else

struct Vec {
  using F = __m512;
  using Mask = __mmask16;
  static constexpr int kWidth = 16;
  static constexpr Mask kAll = 0xFFFF, kLow8 = 0x00FF;

  // f(i, mask) over [from, n): whole 16-lane groups, then one 8-lane group
  // if 8 elements remain (where the AVX2 kernel's last group falls).
  template <typename Fn>
  static int64_t for_groups(int64_t from, int64_t n, Fn&& f) {
    int64_t i = from;
    for (; i + 16 <= n; i += 16) f(i, kAll);
    if (i + 8 <= n) {
      f(i, kLow8);
      i += 8;
    }
    return i;
  }

  // Masked only in the 8-lane group: for_groups passes constant masks, so
  // whole groups compile to plain loads and stores (masked stores cost more).
  static F load(Mask m, const float* p) { return m == kAll ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p); }
  static void store(Mask m, float* p, F v) {
    if (m == kAll) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, m, v);
  }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F and_(F a, F b) { return _mm512_and_ps(a, b); }
  static F andnot(F a, F b) { return _mm512_andnot_ps(a, b); }
  static F or_(F a, F b) { return _mm512_or_ps(a, b); }
  static F xor_(F a, F b) { return _mm512_xor_ps(a, b); }
  static F exp(F x) { return exp16(x); }
  static F select_lt(F a, F b, F if_lt, F otherwise) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), otherwise, if_lt);
  }
  static F swap_pairs(F a) { return _mm512_permute_ps(a, 0xB1); }

  // Softmax's max: seeded with x[0], every group folds in (masked in the
  // 8-lane group); exact in any order.
  static F max_seed(const float* x, int64_t& from) {
    from = 0;
    return _mm512_set1_ps(x[0]);
  }
  static F max(Mask m, F acc, F v) { return _mm512_mask_max_ps(acc, m, acc, v); }
  static float hmax(F v) { return _mm512_reduce_max_ps(v); }

  // The AVX2 kernel's widening sum, 8 elements at a time in order.
  static __m256d add_widened(__m256d acc, F v, Mask m) {
    acc = widen8(acc, _mm512_castps512_ps256(v));
    if (m == kAll) acc = widen8(acc, _mm512_extractf32x8_ps(v, 1));
    return acc;
  }

  // Sum of squares in f64, 16 elements a step: lanes 0-3 and 4-7 are the AVX2
  // kernel's two accumulators, fed the same elements in the same order.
  // (No member initializer: GCC would compile the implicit constructor
  // outside the target region.)
  struct SquareSum {
    __m512d acc;
  };
  static SquareSum no_squares() { return {_mm512_setzero_pd()}; }
  static void add_squares16(SquareSum& s, const float* p) {
    __m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(p));
    s.acc = _mm512_fmadd_pd(d, d, s.acc);
    d = _mm512_cvtps_pd(_mm256_loadu_ps(p + 8));
    s.acc = _mm512_fmadd_pd(d, d, s.acc);
  }
  static double total(const SquareSum& s) {
    return simd::hsum_pd(_mm256_add_pd(_mm512_castpd512_pd256(s.acc), _mm512_extractf64x4_pd(s.acc, 1)));
  }

 private:
  static __m256d widen8(__m256d acc, __m256 v) {
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
};

#endif

}  // namespace stride::isa::STRIDE_ISA_NS
