#pragma once
// The attention stage of one layer of a batched step: every sequence writes
// its new K/V, top-k layers select their pages, then the stateless kernel runs
// on each sequence's page lists. With many short sequences (continuous-batching
// decode) one kernel call is too small to split across the pool, so the calls
// run side by side instead, one sequence per worker; a sequence holding most
// of the step's attention work (a long prefill) still gets the whole pool.
// The kernel splits its work by a rule of the plan, never by the pool size,
// so the outputs are bit-identical to running every sequence by itself.
#include <cstdint>

#include "attention/attention_params.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "kv/step_kv.h"
#include "model/sharded_attention.h"

namespace stride {

// Rows of q/k/v/out follow the plan's sequences in order ([sum of n_new, ...]):
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

// Sets each sequence's layer plan `seconds`. sharded (null: none) attends
// instead of the kernel, for a step of one sequence only.
Status attend_batch(StepKv& kv, StepPlan& plan, int layer, const AttentionParams& ap,
                    const BatchAttentionIO& io, ThreadPool& pool, ShardedAttention* sharded = nullptr);

}  // namespace stride
