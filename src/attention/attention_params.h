#pragma once
// Per-layer parameters of one attention call: what the kernel needs besides
// the queries, the page plan and the pool.
#include <cmath>

#include "kernels/rope_table.h"

namespace stride {

struct AttentionParams {
  int n_head = 0;           // query heads (a multiple of n_kv_heads: GQA)
  float scale = 0.f;        // softmax scale; 0 means 1/sqrt(head_dim_k)
  float softcap = 0.f;      // 0: off; else cap * tanh(s / cap)
  // RoPE of this layer (owned by the model), so cache-relative R-SWA can
  // re-rotate queries for sink keys. Required when such a policy runs.
  const RopeTable* rope = nullptr;
};

// The softmax scale actually applied (0 in AttentionParams means the default).
inline float attention_scale(const AttentionParams& p, int head_dim_k) {
  return p.scale != 0.f ? p.scale : 1.f / std::sqrt((float)head_dim_k);
}

}  // namespace stride
