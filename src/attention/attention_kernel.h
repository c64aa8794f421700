#pragma once
// The fused paged attention kernel: runs any AttentionPlan. For each
// (query block, kv head[, kv split]) work item it streams the listed pages,
// masks edge pages with policy_attends on the slots' stored positions, and
// keeps an online softmax state (m, d, o) per query row. Pages are f16 or
// int8 (widened in registers; for int8 the per-token key scale is applied to
// each score and the value scale folded into each probability) or f32; one
// set of row tiles (attention_tiles.h) serves all three. Split partial
// states are merged exactly (flash-decoding), so a single decode query still
// keeps several threads busy; the split is data in the plan (plan.work, set
// by the planner), so results and partition are the same for any pool size.
#include <cmath>

#include "attention/attention_params.h"
#include "attention/plan.h"
#include "attention/policy.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "kv/store/kv_pool.h"

namespace stride {

// q:   [plan.n_q, p.n_head, head_dim_k] f32, RoPE applied at absolute positions
// out: [plan.n_q, p.n_head, head_dim_v] f32
// A query that sees no key at all gets a zero output. A plan that names a
// page outside the pool, or heads that do not divide, is an error before
// any page is read (check_plan_bounds).
Status attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                       const AttentionParams& p, const float* q, float* out, ThreadPool& threads);

// The unnormalised softmax states of attention over a subset of the keys
// (one shard's pages), so that partials over disjoint keys merge exactly
// with softmax_merge. Row r = query i * n_head + head, as in out.
// m, d: [n_q, p.n_head]; o: [n_q, p.n_head, head_dim_v], sum_j exp(s_j - m) v_j.
// A row that sees no key gets m = -inf, d = 0, o = 0 (or, with an
// attention sink, the sink's own state: m = its logit, d = 1, o = 0).
struct AttentionPartialOut {
  float* m = nullptr;
  float* d = nullptr;
  float* o = nullptr;
};

// attention_paged without the final o / d: the states for a merge.
Status attention_paged_partial(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                               const AttentionParams& p, const float* q, const AttentionPartialOut& out,
                               ThreadPool& threads);

// Softmax partial state of one query row over a subset of keys.
struct SoftmaxPartial {
  float m = -INFINITY;  // running max of scores
  float d = 0.f;        // sum of exp(s - m)
};

// Exact merge of two partials: (m, d, o) <- (m, d, o) (+) (m2, d2, o2); o has n values.
void softmax_merge(SoftmaxPartial& a, float* o, const SoftmaxPartial& b, const float* o2, int n);

}  // namespace stride
