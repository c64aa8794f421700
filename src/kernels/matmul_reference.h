#pragma once
// A second scalar reference for quantized weights: it quantizes the
// activations exactly as the fast path does (quantize_acts_ref, with the
// weight type's act_scale_blocks: one scale per 256 for K-quants) and then
// accumulates dequantized-weight x dequantized-activation products in double.
// The fast integer path must match it to float rounding.
#include <cstdint>

#include "core/tensor.h"

namespace stride {

void matmul_ref_int8_acts(const TensorView& w, const float* x, float* y, int64_t n_tok);

}  // namespace stride
