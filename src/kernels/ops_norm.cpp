// RMSNorm, residual add and logit soft-capping: the reference, the AVX2
// kernels and the entry points, which run the active path's kernel
// (kernel_paths.h; AVX-512: ops_avx512.cpp).
#include <cmath>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/ops.h"
#include "kernels/ops_vec.h"

namespace stride {

using namespace ops_detail;

void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  kernels::active_kernels().rmsnorm(x, w, y, n_rows, n, eps);
}
void add_inplace(float* y, const float* x, int64_t n) { kernels::active_kernels().add_inplace(y, x, n); }
void softcap(float* x, int64_t n, float cap) { kernels::active_kernels().softcap(x, n, cap); }

void rmsnorm_ref(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;  // [n]
    float* yr = y + r * n;        // [n]
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (double)xr[i] * xr[i];
    const float scale = (float)(1.0 / std::sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
  }
}

void isa::avx2::rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;  // [n]
    float* yr = y + r * n;        // [n]
    int64_t i = 0;
    double ss = 0.0;
#ifdef STRIDE_OPS_AVX2
    // Widen to f64 before squaring: same precision as the reference, 4 lanes at a time.
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
    for (; i + 16 <= n; i += 16) {
      const __m256 a = _mm256_loadu_ps(xr + i), b = _mm256_loadu_ps(xr + i + 8);
      const __m128 alo = _mm256_castps256_ps128(a), ahi = _mm256_extractf128_ps(a, 1);
      const __m128 blo = _mm256_castps256_ps128(b), bhi = _mm256_extractf128_ps(b, 1);
      __m256d d;
      d = _mm256_cvtps_pd(alo); acc0 = _mm256_fmadd_pd(d, d, acc0);
      d = _mm256_cvtps_pd(ahi); acc1 = _mm256_fmadd_pd(d, d, acc1);
      d = _mm256_cvtps_pd(blo); acc0 = _mm256_fmadd_pd(d, d, acc0);
      d = _mm256_cvtps_pd(bhi); acc1 = _mm256_fmadd_pd(d, d, acc1);
    }
    ss = simd::hsum_pd(_mm256_add_pd(acc0, acc1));
#endif
    for (; i < n; ++i) ss += (double)xr[i] * xr[i];
    const float scale = (float)(1.0 / std::sqrt(ss / (double)n + (double)eps));

    i = 0;
#ifdef STRIDE_OPS_AVX2
    const __m256 vs = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + i), vs);
      if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
      _mm256_storeu_ps(yr + i, v);
    }
#endif
    for (; i < n; ++i) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
  }
}

void isa::avx2::add_inplace(float* y, const float* x, int64_t n) {
  int64_t i = 0;
#ifdef STRIDE_OPS_AVX2
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  }
#endif
  for (; i < n; ++i) y[i] += x[i];
}

void isa::avx2::softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  int64_t i = 0;
#ifdef STRIDE_OPS_AVX2
  const __m256 vc = _mm256_set1_ps(cap), vinv = _mm256_set1_ps(inv);
  for (; i + 8 <= n; i += 8) {
    const __m256 t = tanh256(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    _mm256_storeu_ps(x + i, _mm256_mul_ps(t, vc));
  }
#endif
  for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

}  // namespace stride
