// Gated activations (SwiGLU, GeGLU-tanh), softmax and log-sum-exp: the references and
// the entry points, which run the active path's kernel (kernel_paths.h;
// the kernels: isa/ops.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

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
double log_sum_exp(const float* x, int64_t n) { return kernels::active_kernels().log_sum_exp(x, n); }

void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = (float)(g / (1.0 + std::exp(-g)) * (double)up[i]);
  }
}

void gelu_tanh_mul_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = gate[i];
    const double u = kSqrt2OverPi * (x + kGeluCoef * x * x * x);
    out[i] = (float)(0.5 * x * (1.0 + std::tanh(u)) * (double)up[i]);
  }
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

double log_sum_exp_ref(const float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (n <= 0) return kNegInf;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == kNegInf) return kNegInf;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp((double)x[i] - (double)mx);
  return (double)mx + std::log(sum);
}

}  // namespace stride
