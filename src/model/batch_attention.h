#pragma once
// The attention stage of one layer of a batched step: every sequence writes
// its new K/V, then attends over its own pages. With many short sequences
// (continuous-batching decode) one attend call is too small to split across
// the pool, so the calls run side by side instead, one sequence per worker;
// a sequence holding most of the step's attention work (a long prefill)
// still gets the whole pool. Each call sees a pool of the caller's size()
// either way, so it chunks its work exactly as it would alone and the
// outputs are bit-identical to running every sequence by itself.
#include <cstdint>

#include "attention/kv_cache.h"
#include "core/thread_pool.h"
#include "model/transformer.h"

namespace stride {

// Rows of q/k/v/out follow the steps' tokens in order ([sum of steps[i].n, ...]):
// q:   [n, q_row]  (q_row  = n_head * head_dim_k)
// k:   [n, k_row]  (k_row  = n_kv_heads * head_dim_k), v: [n, v_row]
// out: [n, out_row] (out_row = n_head * head_dim_v)
struct BatchAttentionIO {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  int64_t q_row = 0, k_row = 0, v_row = 0, out_row = 0;
};

void attend_batch(KVCache& kv, int layer, const SequenceStep* steps, int n_steps,
                  const AttentionParams& ap, const BatchAttentionIO& io, ThreadPool& pool);

}  // namespace stride
