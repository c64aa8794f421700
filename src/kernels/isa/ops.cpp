// The element-wise ops of kernel_paths.h, written once over the target's
// vector (isa/vec.h) and compiled per target (stride_isa_variant): AVX2 and
// AVX-512 run the same per-lane operations (exp and tanh are the same
// polynomials in the same order), the same scalar tails and the same
// double-precision summation trees, so every path's result is the AVX2
// path's bit for bit. A kernel variant (isa/begin.h).
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
#include "kernels/isa/vec.h"
namespace stride::isa::STRIDE_ISA_NS {
namespace {

using namespace ops_detail;
using F = Vec::F;
using Mask = Vec::Mask;

// tanh: odd polynomial near 0 (where 1 - 2/(e^2x+1) would cancel), exp form elsewhere.
F tanh_v(F x) {
  const F sign_mask = Vec::set1(-0.0f);
  const F sign = Vec::and_(x, sign_mask);
  const F ax = Vec::andnot(sign_mask, x);
  // |x| < kTanhSmall
  const F z = Vec::mul(ax, ax);
  F p = Vec::set1(kTanhPoly[0]);
  for (int k = 1; k < 5; ++k) p = Vec::fmadd(p, z, Vec::set1(kTanhPoly[k]));
  const F small = Vec::fmadd(Vec::mul(p, z), ax, ax);
  // |x| >= kTanhSmall
  const F e = Vec::exp(Vec::add(ax, ax));
  const F large = Vec::sub(Vec::set1(1.0f), Vec::div(Vec::set1(2.0f), Vec::add(e, Vec::set1(1.0f))));
  return Vec::or_(Vec::select_lt(ax, Vec::set1(kTanhSmall), small, large), sign);
}

// The largest of x[0, n) (n >= 1): exact in any order, so every path agrees.
float max_of(const float* x, int64_t n) {
  int64_t i = 0;
  float mx = x[0];
  if (n >= 8) {
    int64_t from = 0;
    F vm = Vec::max_seed(x, from);
    i = Vec::for_groups(from, n, [&](int64_t j, Mask m) { vm = Vec::max(m, vm, Vec::load(m, x + j)); });
    mx = Vec::hmax(vm);
  }
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  return mx;
}

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;  // [n]
    float* yr = y + r * n;        // [n]
    // Widened to f64 before squaring: the reference's precision.
    Vec::SquareSum acc = Vec::no_squares();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) Vec::add_squares16(acc, xr + i);
    double ss = Vec::total(acc);
    for (; i < n; ++i) ss += (double)xr[i] * xr[i];
    const float scale = (float)(1.0 / std::sqrt(ss / (double)n + (double)eps));

    const F vs = Vec::set1(scale);
    i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
      F v = Vec::mul(Vec::load(m, xr + j), vs);
      if (w) v = Vec::mul(v, Vec::load(m, w + j));
      Vec::store(m, yr + j, v);
    });
    for (; i < n; ++i) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const F one = Vec::set1(1.0f), neg = Vec::set1(-0.0f);
  int64_t i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
    const F g = Vec::load(m, gate + j);
    const F s = Vec::div(g, Vec::add(one, Vec::exp(Vec::xor_(g, neg))));
    Vec::store(m, out + j, Vec::mul(s, Vec::load(m, up + j)));
  });
  for (; i < n; ++i) out[i] = silu_f(gate[i]) * up[i];
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) {
  const F one = Vec::set1(1.0f);
  const F c = Vec::set1((float)kGeluCoef);
  const F m2k = Vec::set1(-2.0f * (float)kSqrt2OverPi);
  int64_t i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
    const F x = Vec::load(m, gate + j);
    const F x3 = Vec::mul(Vec::mul(x, x), x);
    const F m2u = Vec::mul(m2k, Vec::fmadd(c, x3, x));  // -2u
    const F g = Vec::div(x, Vec::add(one, Vec::exp(m2u)));
    Vec::store(m, out + j, Vec::mul(g, Vec::load(m, up + j)));
  });
  for (; i < n; ++i) out[i] = gelu_tanh_f(gate[i]) * up[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = max_of(x, n);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0.0f;  // all masked: avoid NaN

  // The sum in f64 through one 4-lane accumulator, 4 elements at a time in order.
  const F vmx = Vec::set1(mx);
  __m256d acc = _mm256_setzero_pd();
  int64_t i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
    const F e = Vec::exp(Vec::sub(Vec::load(m, x + j), vmx));
    Vec::store(m, x + j, e);
    acc = Vec::add_widened(acc, e, m);
  });
  double sum = simd::hsum_pd(acc);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }

  const float inv = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
  const F vinv = Vec::set1(inv);
  i = Vec::for_groups(0, n, [&](int64_t j, Mask m) { Vec::store(m, x + j, Vec::mul(Vec::load(m, x + j), vinv)); });
  for (; i < n; ++i) x[i] *= inv;
}

double log_sum_exp(const float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (n <= 0) return kNegInf;
  const float mx = max_of(x, n);
  if (mx == kNegInf) return kNegInf;  // all masked
  // softmax's exponentials and summation order, without storing them.
  const F vmx = Vec::set1(mx);
  __m256d acc = _mm256_setzero_pd();
  int64_t i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
    acc = Vec::add_widened(acc, Vec::exp(Vec::sub(Vec::load(m, x + j), vmx)), m);
  });
  double sum = simd::hsum_pd(acc);
  for (; i < n; ++i) sum += std::exp(x[i] - mx);
  return (double)mx + std::log(sum);
}

void add_inplace(float* y, const float* x, int64_t n) {
  int64_t i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
    Vec::store(m, y + j, Vec::add(Vec::load(m, y + j), Vec::load(m, x + j)));
  });
  for (; i < n; ++i) y[i] += x[i];
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  const F vc = Vec::set1(cap), vinv = Vec::set1(inv);
  int64_t i = Vec::for_groups(0, n, [&](int64_t j, Mask m) {
    Vec::store(m, x + j, Vec::mul(tanh_v(Vec::mul(Vec::load(m, x + j), vinv)), vc));
  });
  for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

// Adjacent pairs (2i, 2i+1): out = v * cs + swap_pairs(v) * sn (layouts in kernel_paths.h).
void rotate_adjacent(float* v, const float* cs, const float* sn, int rot_dim) {
  const int64_t j = Vec::for_groups(0, rot_dim, [&](int64_t k, Mask m) {
    const F a = Vec::load(m, v + k);
    Vec::store(m, v + k, Vec::fmadd(Vec::swap_pairs(a), Vec::load(m, sn + k), Vec::mul(a, Vec::load(m, cs + k))));
  });
  rotate_adjacent_tail(v, cs, sn, (int)j, rot_dim);
}

// NeoX pairs (i, i + half).
void rotate_neox(float* v, const float* cs, const float* sn, int half) {
  const int64_t i = Vec::for_groups(0, half, [&](int64_t k, Mask m) {
    const F lo = Vec::load(m, v + k), hi = Vec::load(m, v + k + half);
    const F c = Vec::load(m, cs + k), s = Vec::load(m, sn + k);
    Vec::store(m, v + k, Vec::fnmadd(hi, s, Vec::mul(lo, c)));
    Vec::store(m, v + k + half, Vec::fmadd(lo, s, Vec::mul(hi, c)));
  });
  rotate_neox_tail(v, cs, sn, (int)i, half);
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
