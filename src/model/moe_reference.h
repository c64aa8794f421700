#pragma once
// Scalar reference of the mixture-of-experts block, token by token: the
// router's softmax in double, a full sort for the top k, each chosen expert
// applied to the one token, sums in double. The grouped moe_ffn is tested
// against it.
#include <cstdint>
#include <functional>

#include "core/tensor.h"
#include "loader/model_config.h"
#include "model/moe_weights.h"

namespace stride {

// y[n_tok, n_out] = x[n_tok, n_in] · wᵀ, e.g. matmul_ref or matmul_ref_int8_acts.
using ReferenceMatmul = std::function<void(const TensorView& w, const float* x, float* y, int64_t n_tok)>;

// y = MoE(h): h, y [n, n_embd] (y overwritten).
void moe_ffn_reference(const ModelConfig& c, const MoeWeights& w, const float* h, float* y, int n,
                       const ReferenceMatmul& matmul);

}  // namespace stride
