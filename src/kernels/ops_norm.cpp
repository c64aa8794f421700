// RMSNorm, residual add and logit soft-capping: the reference and the entry
// points, which run the active path's kernel (kernel_paths.h; the kernels:
// isa/ops.cpp).
#include <cmath>

#include "kernels/kernel_paths.h"
#include "kernels/ops.h"

namespace stride {

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

}  // namespace stride
