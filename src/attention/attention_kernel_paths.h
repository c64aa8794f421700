#pragma once
// attention_paged as compiled for each CPU path (attention_kernel.inc);
// attention_kernel.cpp picks one.
#include "attention/attention_kernel.h"

namespace stride {
namespace attn_avx2 {
Status attention_paged_path(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                            const AttentionParams& p, const float* q, float* out, ThreadPool& threads);
}
namespace attn_avx512 {
Status attention_paged_path(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                            const AttentionParams& p, const float* q, float* out, ThreadPool& threads);
}
}  // namespace stride
