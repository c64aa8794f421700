#pragma once
// A slow, obviously correct forward pass: scalar kernels, every key kept in a
// plain array, attention computed pair by pair from the policy predicate.
// Cache-relative R-SWA is computed from its definition (each visible key is
// rotated to its rank among the keys the query sees), independently of the
// fast path's shifted-query formulation. Used by tests only.
#include <cstdint>
#include <vector>

#include "attention/policy.h"
#include "core/status.h"
#include "model/transformer.h"

namespace stride {

// Logits [n, n_vocab] for tokens at positions 0..n-1, one policy per layer.
// int8_activations: quantize matmul inputs of quantized weights to int8 as
// the fast path does, so the two can be compared tightly on real models.
Expected<std::vector<float>> reference_forward(const Transformer& model,
                                               const std::vector<PolicySpec>& layer_policies,
                                               const std::vector<int32_t>& tokens,
                                               bool int8_activations = false);

}  // namespace stride
