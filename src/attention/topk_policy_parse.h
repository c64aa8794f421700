#pragma once
// The keys of "topk:..." and "sparse_prefill:..." (grammar in attention/policy.h).
#include <vector>

#include "attention/policy.h"
#include "attention/policy_args.h"

namespace stride {

// sparse_prefill: block-sparse prompt chunks (pooled estimate, adaptive
// budget; the prompt's last chunk dense) and dense decoding; the keys topk
// takes may override it.
Expected<PolicySpec> parse_topk(const std::vector<policy_args::KeyValue>& kvs, bool sparse_prefill);

}  // namespace stride
