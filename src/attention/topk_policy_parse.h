#pragma once
// The keys of "topk:..." and "sparse_prefill:..." (grammar in attention/policy.h).
#include <cstdint>
#include <vector>

#include "attention/policy.h"
#include "attention/policy_args.h"

namespace stride {

// The local window sparse_prefill reads on prompt chunks unless window=W is
// given: each query block reads the pages holding (q_first - 512, q_last].
inline constexpr int64_t kSparsePrefillWindow = 512;

// sparse_prefill: block-sparse prompt chunks (pooled estimate, adaptive
// budget, a 512-token local window; the prompt's last chunk dense) and dense
// decoding; the keys topk takes may override it.
Expected<PolicySpec> parse_topk(const std::vector<policy_args::KeyValue>& kvs, bool sparse_prefill);

}  // namespace stride
