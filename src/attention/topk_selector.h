#pragma once
// Top-k (Quest-style) page selection: the plan of a TopK layer. For every
// query block and kv head it reads the sink pages, the local window pages and
// the highest-scoring other pages, where a page's score is the upper bound of
// q . k from its key summary (per-channel min/max). Scores are the maximum
// over the kv head's group of query heads and the block's queries, so one
// list serves the whole group and block.
#include <cstdint>
#include <vector>

#include "attention/plan.h"
#include "attention/policy.h"
#include "kv/page_summary.h"

namespace stride {

// How many selection groups of n_groups a TopK layer reads: at least the
// fixed ones (sinks + local), else ceil((1 - sparsity) * n_groups).
int64_t topk_keep_count(double sparsity, int64_t n_groups, int64_t n_fixed);

// Selection geometry of one query block: groups [0, n_sink) and
// [local_from, n_groups) are always read. A group is block / page_size pages.
struct TopkGeometry {
  int64_t group_pages = 1;  // pages per selection group
  int64_t n_groups = 0;     // groups holding keys at positions <= q_last
  int64_t n_sink = 0;
  int64_t local_from = 0;
};
TopkGeometry topk_geometry(const PolicySpec& p, int page_size, int64_t n_pages_present,
                           int64_t q_first);

// q: [n_q, n_head, head_dim] (RoPE applied), for queries at q_pos0 + i.
// The plan always carries per-kv-head lists (head_indptr).
AttentionPlan plan_topk(const PolicySpec& p, const std::vector<int32_t>& page_table, int page_size,
                        int64_t kv_len, int64_t q_pos0, int n_q, int q_block,
                        const PageSummaries& sums, const float* q, int n_head, int n_kv_heads);

}  // namespace stride
