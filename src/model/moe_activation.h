#pragma once
// Expert activations beyond the model's plain one, and the expert biases.
// Element-wise and cheap next to the expert matmuls, so the fast path and the
// reference share this scalar code.
#include <cmath>
#include <cstdint>

#include "core/tensor.h"
#include "loader/moe_config.h"

namespace stride {

// gpt-oss: g = min(gate, L), u = clamp(up, -L, L), out = (u + 1) * g * sigmoid(alpha * g).
inline void clamped_swiglu(const MoeConfig& m, float* gate, const float* up, int64_t count) {
  const float L = m.swiglu_limit, alpha = m.swiglu_alpha;
  for (int64_t i = 0; i < count; ++i) {
    const float g = std::fmin(gate[i], L);
    const float u = std::fmax(-L, std::fmin(up[i], L));
    gate[i] = (u + 1.f) * (g / (1.f + std::exp(-alpha * g)));
  }
}

// y[r, :] += bias for r in [0, rows): bias [cols] (f32), a no-op when absent.
inline void add_bias_rows(float* y, const TensorView& bias, int64_t rows, int64_t cols) {
  if (!bias.valid()) return;
  const float* b = reinterpret_cast<const float*>(bias.data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) y[r * cols + i] += b[i];
}

}  // namespace stride
