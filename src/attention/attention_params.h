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
  // Attention sinks (gpt-oss): one learned logit per query head that joins
  // each row's softmax denominator, in the units of the scaled (and capped)
  // scores, with no value of its own: out = sum_j softmax([s, sink])_j v_j.
  // [n_head]; nullptr: none.
  const float* sink_logits = nullptr;
};

// The sink logit of query head `hq`, or -inf (no sink) when the layer has none.
inline float attention_sink_logit(const AttentionParams& p, int hq) {
  return p.sink_logits ? p.sink_logits[hq] : -INFINITY;
}

// The softmax scale actually applied (0 in AttentionParams means the default).
inline float attention_scale(const AttentionParams& p, int head_dim_k) {
  return p.scale != 0.f ? p.scale : 1.f / std::sqrt((float)head_dim_k);
}

}  // namespace stride
