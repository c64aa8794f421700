#include "dist/kv_shard.h"

#include <algorithm>
#include <vector>

#include "attention/work_partition.h"

namespace stride::dist {

AttentionPlan plan_shard_attention(const PolicySpec& policy, const KvShard& shard, int page_size,
                                   int n_kv_heads, int64_t q_pos0, int n_q, int q_block) {
  const int64_t first_page = shard.pos_begin / page_size;
  const int64_t n_logical = (shard.pos_end + page_size - 1) / page_size;
  // Logical pages before the shard are planned as page 0 and dropped below:
  // they live on other ranks.
  std::vector<int32_t> table((size_t)n_logical, 0);
  for (int64_t l = first_page; l < n_logical; ++l) table[(size_t)l] = shard.pool_page((int32_t)(l - first_page));
  const AttentionPlan whole = plan_attention(policy, table, page_size, shard.pos_end, q_pos0, n_q, q_block);

  AttentionPlan plan;
  plan.q_block = whole.q_block;
  plan.n_q = whole.n_q;
  plan.q_pos0 = whole.q_pos0;
  plan.indptr.assign(1, 0);
  for (int b = 0; b < whole.n_blocks(); ++b) {
    for (int32_t e = whole.indptr[b]; e < whole.indptr[b + 1]; ++e) {
      if (whole.page_first[e] < shard.pos_begin) continue;
      plan.page_ids.push_back(whole.page_ids[e]);
      plan.page_valid.push_back(whole.page_valid[e]);
      plan.page_first.push_back(whole.page_first[e]);
      plan.page_full.push_back(whole.page_full[e]);
    }
    plan.indptr.push_back((int32_t)plan.page_ids.size());
  }
  plan.work = partition_work(plan, page_size, n_kv_heads);
  return plan;
}

std::vector<KvShard> split_at_segments(const KvShard& shard, int page_size) {
  const int64_t segment = (int64_t)kSegmentPages * page_size;
  std::vector<KvShard> pieces;
  for (int64_t begin = shard.pos_begin; begin < shard.pos_end;) {
    const int64_t end = std::min(shard.pos_end, (begin / segment + 1) * segment);
    KvShard piece{begin, end, {}};
    const int32_t first = (int32_t)((begin - shard.pos_begin) / page_size);
    for (int32_t i = 0; i < piece.pages(page_size); ++i) piece.page_ids.push_back(shard.pool_page(first + i));
    pieces.push_back(std::move(piece));
    begin = end;
  }
  return pieces;
}

}  // namespace stride::dist
