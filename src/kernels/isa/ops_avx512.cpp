// The element-wise ops on the AVX-512 path: 16 lanes at a time, then one
// 8-lane group where the AVX2 kernel has one, then the same scalar tail, with
// the AVX2 kernels' per-lane operations (exp and tanh are the same
// polynomials in the same order) and their double-precision summation trees,
// so every result equals the AVX2 path's bit for bit. A kernel variant of
// the avx512 target (isa/begin.h).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/ops_vec.h"
#include "kernels/simd/exp.h"
#include "kernels/simd/reduce.h"

#include "kernels/isa/begin.h"
#include "kernels/isa/exp16.h"
namespace stride::isa::STRIDE_ISA_NS {
namespace {

using namespace ops_detail;

constexpr __mmask16 kAll = 0xFFFF, kLow8 = 0x00FF;

// f(i, mask) over [0, n): whole 16-lane groups, then one 8-lane group if 8
// elements remain (where the AVX2 kernel's last vector group falls). Returns
// where the scalar tail starts.
template <typename F>
int64_t for_groups(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) f(i, kAll);
  if (i + 8 <= n) {
    f(i, kLow8);
    i += 8;
  }
  return i;
}

// Masked only in the 8-lane group: for_groups passes constant masks, so the
// whole groups compile to plain loads and stores (masked stores cost more).
inline __m512 load(__mmask16 m, const float* p) {
  return m == kAll ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
inline void store(__mmask16 m, float* p, __m512 v) {
  if (m == kAll) _mm512_storeu_ps(p, v);
  else _mm512_mask_storeu_ps(p, m, v);
}

// ops_detail::tanh256, 16 lanes.
__m512 tanh512(__m512 x) {
  const __m512 sign_mask = _mm512_set1_ps(-0.0f);
  const __m512 sign = _mm512_and_ps(x, sign_mask);
  const __m512 ax = _mm512_andnot_ps(sign_mask, x);
  const __m512 z = _mm512_mul_ps(ax, ax);
  __m512 p = _mm512_set1_ps(kTanhPoly[0]);
  for (int k = 1; k < 5; ++k) p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(kTanhPoly[k]));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), ax, ax);
  const __m512 e = exp16(_mm512_add_ps(ax, ax));
  const __m512 large = _mm512_sub_ps(
      _mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  const __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ);
  return _mm512_or_ps(_mm512_mask_blend_ps(is_small, large, small), sign);
}

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;  // [n]
    float* yr = y + r * n;        // [n]
    // Lanes 0-3 and 4-7 are the AVX2 kernel's two f64 accumulators, fed the
    // same elements in the same order.
    __m512d acc = _mm512_setzero_pd();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      __m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(xr + i));
      acc = _mm512_fmadd_pd(d, d, acc);
      d = _mm512_cvtps_pd(_mm256_loadu_ps(xr + i + 8));
      acc = _mm512_fmadd_pd(d, d, acc);
    }
    double ss = simd::hsum_pd(_mm256_add_pd(_mm512_castpd512_pd256(acc), _mm512_extractf64x4_pd(acc, 1)));
    for (; i < n; ++i) ss += (double)xr[i] * xr[i];
    const float scale = (float)(1.0 / std::sqrt(ss / (double)n + (double)eps));

    const __m512 vs = _mm512_set1_ps(scale);
    i = for_groups(n, [&](int64_t j, __mmask16 m) {
      __m512 v = _mm512_mul_ps(load(m, xr + j), vs);
      if (w) v = _mm512_mul_ps(v, load(m, w + j));
      store(m, yr + j, v);
    });
    for (; i < n; ++i) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), neg = _mm512_set1_ps(-0.0f);
  int64_t i = for_groups(n, [&](int64_t j, __mmask16 m) {
    const __m512 g = load(m, gate + j);
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp16(_mm512_xor_ps(g, neg))));
    store(m, out + j, _mm512_mul_ps(s, load(m, up + j)));
  });
  for (; i < n; ++i) out[i] = silu_f(gate[i]) * up[i];
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 c = _mm512_set1_ps((float)kGeluCoef);
  const __m512 m2k = _mm512_set1_ps(-2.0f * (float)kSqrt2OverPi);
  int64_t i = for_groups(n, [&](int64_t j, __mmask16 m) {
    const __m512 x = load(m, gate + j);
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 m2u = _mm512_mul_ps(m2k, _mm512_fmadd_ps(c, x3, x));  // -2u
    const __m512 g = _mm512_div_ps(x, _mm512_add_ps(one, exp16(m2u)));
    store(m, out + j, _mm512_mul_ps(g, load(m, up + j)));
  });
  for (; i < n; ++i) out[i] = gelu_tanh_f(gate[i]) * up[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  int64_t i = 0;
  float mx = x[0];
  if (n >= 8) {  // the max is exact in any order
    __m512 vm = _mm512_set1_ps(x[0]);
    i = for_groups(n, [&](int64_t j, __mmask16 m) { vm = _mm512_mask_max_ps(vm, m, vm, load(m, x + j)); });
    mx = _mm512_reduce_max_ps(vm);
  }
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0.0f;  // all masked: avoid NaN

  // The sum in f64 through one 4-lane accumulator, 4 elements at a time in
  // order: the AVX2 kernel's tree.
  const __m512 vmx = _mm512_set1_ps(mx);
  __m256d acc = _mm256_setzero_pd();
  i = for_groups(n, [&](int64_t j, __mmask16 m) {
    const __m512 e = exp16(_mm512_sub_ps(load(m, x + j), vmx));
    store(m, x + j, e);
    acc = add_widened(acc, _mm512_castps512_ps256(e));
    if (m == kAll) acc = add_widened(acc, _mm512_extractf32x8_ps(e, 1));
  });
  double sum = simd::hsum_pd(acc);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }

  const float inv = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
  const __m512 vinv = _mm512_set1_ps(inv);
  i = for_groups(n, [&](int64_t j, __mmask16 m) { store(m, x + j, _mm512_mul_ps(load(m, x + j), vinv)); });
  for (; i < n; ++i) x[i] *= inv;
}

void add_inplace(float* y, const float* x, int64_t n) {
  int64_t i = for_groups(n, [&](int64_t j, __mmask16 m) {
    store(m, y + j, _mm512_add_ps(load(m, y + j), load(m, x + j)));
  });
  for (; i < n; ++i) y[i] += x[i];
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  const __m512 vc = _mm512_set1_ps(cap), vinv = _mm512_set1_ps(inv);
  int64_t i = for_groups(n, [&](int64_t j, __mmask16 m) {
    store(m, x + j, _mm512_mul_ps(tanh512(_mm512_mul_ps(load(m, x + j), vinv)), vc));
  });
  for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void rotate_adjacent(float* v, const float* cs, const float* sn, int rot_dim) {
  const int64_t j = for_groups(rot_dim, [&](int64_t k, __mmask16 m) {
    const __m512 a = load(m, v + k);
    const __m512 sw = _mm512_permute_ps(a, 0xB1);  // (1,0,3,2) within each 128-bit lane
    store(m, v + k, _mm512_fmadd_ps(sw, load(m, sn + k), _mm512_mul_ps(a, load(m, cs + k))));
  });
  rotate_adjacent_tail(v, cs, sn, (int)j, rot_dim);
}

void rotate_neox(float* v, const float* cs, const float* sn, int half) {
  const int64_t i = for_groups(half, [&](int64_t k, __mmask16 m) {
    const __m512 lo = load(m, v + k), hi = load(m, v + k + half);
    const __m512 c = load(m, cs + k), s = load(m, sn + k);
    store(m, v + k, _mm512_fnmadd_ps(hi, s, _mm512_mul_ps(lo, c)));
    store(m, v + k + half, _mm512_fmadd_ps(lo, s, _mm512_mul_ps(hi, c)));
  });
  rotate_neox_tail(v, cs, sn, (int)i, half);
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
