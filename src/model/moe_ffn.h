#pragma once
// The mixture-of-experts feed-forward block: route each token to k experts,
// then run every expert once over all the rows routed to it (a grouped
// matmul: gather the rows, one matmul per projection, scatter-add the
// weighted results). Experts without tokens cost nothing. moe_reference.h
// holds the token-by-token reference it is tested against.
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "loader/model_config.h"
#include "model/moe_router.h"
#include "model/moe_weights.h"

namespace stride {

// Buffers reused across layers and steps; they grow to the largest step.
struct MoeScratch {
  std::vector<float> logits;        // [n, n_expert] router logits
  MoeRouting routing;               // [n, k]
  std::vector<int32_t> offset;      // [n_expert + 1] first grouped row of each expert
  std::vector<int32_t> row_token;   // [n * k] token of each grouped row (rows grouped by expert)
  std::vector<int32_t> slot_row;    // [n, k] grouped row of each (token, slot)
  std::vector<float> xs;            // [n * k, n_embd] gathered inputs
  std::vector<float> gate, up;      // [n * k, n_ff_expert] (also [n, n_ff_shared])
  std::vector<float> ys;            // [n * k, n_embd] expert outputs
  std::vector<float> shared;        // [n, n_embd] shared expert output
};

// y = MoE(h): h, y [n, n_embd] (y overwritten). packed: the repacked experts
// (may be null or hold null entries: those run on the file's bytes).
void moe_ffn(const ModelConfig& c, const MoeWeights& w, const PackedMoe* packed, const float* h, float* y, int n,
             MoeScratch& s, ThreadPool& pool);

}  // namespace stride
