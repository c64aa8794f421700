#pragma once
// The scalar reference: naive attention over plain f32 K/V of ALL positions
// with an explicit mask from policy_attends, including the cache-relative
// sink shift. Slow and obviously correct; the fast paged kernel is tested
// against it and `stride validate` uses it.
#include <cstdint>
#include <functional>

#include "attention/attention_params.h"
#include "attention/policy.h"

namespace stride {

// q:   [n_q, p.n_head, head_dim_k] at positions q_pos0 + i
// k:   [n_kv, n_kv_heads, head_dim_k] at positions 0 .. n_kv - 1
// v:   [n_kv, n_kv_heads, head_dim_v]
// out: [n_q, p.n_head, head_dim_v]; a query that sees no key gets zeros.
void attention_reference(const PolicySpec& policy, const AttentionParams& p, int n_kv_heads,
                         int head_dim_k, int head_dim_v, const float* q, int n_q, int64_t q_pos0,
                         const float* k, const float* v, int64_t n_kv, float* out);

// The same with an explicit mask instead of a policy (no sink shift), for
// policies whose visibility is the plan's choice (top-k): may query i (at
// batch row i) through query head hq see the key at position j?
using KeyVisibility = std::function<bool(int i, int hq, int64_t j)>;
void attention_reference_masked(const AttentionParams& p, int n_kv_heads, int head_dim_k,
                                int head_dim_v, const float* q, int n_q, const float* k,
                                const float* v, int64_t n_kv, const KeyVisibility& visible,
                                float* out);

}  // namespace stride
