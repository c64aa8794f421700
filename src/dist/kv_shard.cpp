#include "dist/kv_shard.h"

#include <algorithm>
#include <vector>

#include "attention/work_partition.h"

namespace stride::dist {

std::span<const int32_t> KvShard::pool_pages(int32_t n, std::vector<int32_t>& scratch) const {
  if (page_view) return {page_view, (size_t)n};
  if (!page_ids.empty()) return {page_ids.data(), (size_t)n};
  scratch.resize((size_t)n);
  for (int32_t i = 0; i < n; ++i) scratch[(size_t)i] = i;
  return scratch;
}

AttentionPlan plan_shard_attention(const PolicySpec& policy, const KvShard& shard, int page_size,
                                   int n_kv_heads, int64_t q_pos0, int n_q, int q_block) {
  std::vector<int32_t> identity;
  AttentionPlan plan = plan_attention_pages(policy, shard.pool_pages(shard.pages(page_size), identity),
                                            shard.pos_begin / page_size, page_size, shard.pos_end, q_pos0, n_q,
                                            q_block);
  plan.work = partition_work(plan, page_size, n_kv_heads);
  return plan;
}

namespace {

// shard's keys [begin, end) (page-aligned at begin), naming their pool pages.
KvShard piece_of(const KvShard& shard, int64_t begin, int64_t end, int page_size) {
  KvShard piece{begin, end, {}};
  const int32_t offset = (int32_t)((begin - shard.pos_begin) / page_size);
  for (int32_t i = 0; i < piece.pages(page_size); ++i) piece.page_ids.push_back(shard.pool_page(offset + i));
  return piece;
}

}  // namespace

std::vector<KvShard> split_at_segments(const KvShard& shard, int page_size) {
  const int64_t segment = (int64_t)kSegmentPages * page_size;
  std::vector<KvShard> pieces;
  for (int64_t begin = shard.pos_begin; begin < shard.pos_end;) {
    const int64_t end = std::min(shard.pos_end, (begin / segment + 1) * segment);
    pieces.push_back(piece_of(shard, begin, end, page_size));
    begin = end;
  }
  return pieces;
}

std::vector<KvShard> segments_read(const AttentionPlan& plan, const KvShard& shard, int page_size, bool keep_first) {
  const int64_t segment = (int64_t)kSegmentPages * page_size;
  std::vector<int64_t> firsts;  // [segments] the first key of each segment read, ascending
  if (keep_first && shard.tokens() > 0) firsts.push_back(shard.pos_begin / segment * segment);
  for (int64_t e = 0; e < plan.n_entries(); ++e) firsts.push_back(plan.page_first[(size_t)e] / segment * segment);
  std::sort(firsts.begin(), firsts.end());
  firsts.erase(std::unique(firsts.begin(), firsts.end()), firsts.end());
  std::vector<KvShard> pieces;
  for (const int64_t first : firsts)
    pieces.push_back(piece_of(shard, std::max(first, shard.pos_begin), std::min(first + segment, shard.pos_end),
                              page_size));
  return pieces;
}

}  // namespace stride::dist
