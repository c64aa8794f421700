// Gated activations (SwiGLU, GeGLU-tanh) and softmax: the references, the
// AVX2 kernels and the entry points, which run the active path's kernel
// (kernel_paths.h; AVX-512: ops_avx512.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/ops.h"
#include "kernels/ops_vec.h"

namespace stride {

using namespace ops_detail;

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  kernels::active_kernels().silu_mul(gate, up, out, n);
}
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) {
  kernels::active_kernels().gelu_tanh_mul(gate, up, out, n);
}
void softmax(float* x, int64_t n) { kernels::active_kernels().softmax(x, n); }

void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = (float)(g / (1.0 + std::exp(-g)) * (double)up[i]);
  }
}

void isa::avx2::silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
#ifdef STRIDE_OPS_AVX2
  const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = simd::exp_ps(_mm256_xor_ps(g, neg));
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) out[i] = silu_f(gate[i]) * up[i];
}

void gelu_tanh_mul_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = gate[i];
    const double u = kSqrt2OverPi * (x + kGeluCoef * x * x * x);
    out[i] = (float)(0.5 * x * (1.0 + std::tanh(u)) * (double)up[i]);
  }
}

void isa::avx2::gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
#ifdef STRIDE_OPS_AVX2
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 c = _mm256_set1_ps((float)kGeluCoef);
  const __m256 m2k = _mm256_set1_ps(-2.0f * (float)kSqrt2OverPi);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(gate + i);
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 m2u = _mm256_mul_ps(m2k, _mm256_fmadd_ps(c, x3, x));  // -2u
    const __m256 g = _mm256_div_ps(x, _mm256_add_ps(one, simd::exp_ps(m2u)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(g, _mm256_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) out[i] = gelu_tanh_f(gate[i]) * up[i];
}

void softmax_ref(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0.0f;  // all masked: avoid NaN
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = std::exp((double)x[i] - (double)mx);
    x[i] = (float)e;
    sum += e;
  }
  const double inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (int64_t i = 0; i < n; ++i) x[i] = (float)((double)x[i] * inv);
}

void isa::avx2::softmax(float* x, int64_t n) {
  if (n <= 0) return;
  int64_t i = 0;
  float mx = x[0];
#ifdef STRIDE_OPS_AVX2
  if (n >= 8) {
    __m256 vm = _mm256_loadu_ps(x);
    for (i = 8; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    mx = simd::hmax(vm);
  }
#endif
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0.0f;  // all masked: avoid NaN

  i = 0;
  double sum = 0.0;
#ifdef STRIDE_OPS_AVX2
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256d acc = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    const __m256 e = simd::exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
    _mm256_storeu_ps(x + i, e);
    acc = add_widened(acc, e);
  }
  sum = simd::hsum_pd(acc);
#endif
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }

  const float inv = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
  i = 0;
#ifdef STRIDE_OPS_AVX2
  const __m256 vinv = _mm256_set1_ps(inv);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
#endif
  for (; i < n; ++i) x[i] *= inv;
}

}  // namespace stride
