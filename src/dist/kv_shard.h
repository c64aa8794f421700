#pragma once
// The keys one rank holds of a sequence sharded by position: the contiguous
// positions [pos_begin, pos_end), kept in pages of the rank's own pool (the
// i-th page holds positions pos_begin + i * page_size onwards, each slot with
// its absolute position, so policies mask as on one host): the pool pages
// page_view points at (a page table that outlives the shard, read only where
// a plan needs a page, so a decode step under a window does not walk the
// whole shard), else those page_ids lists, else pages 0, 1, .... pos_begin
// is a multiple of the page size; for the one-host kernel's bits the shard
// boundaries are multiples of its segment (kSegmentPages pages).
#include <cstdint>
#include <span>
#include <vector>

#include "attention/attention_params.h"
#include "attention/plan.h"
#include "attention/policy.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride::dist {

struct KvShard {
  int64_t pos_begin = 0;
  int64_t pos_end = 0;
  std::vector<int32_t> page_ids{};  // [pages(page_size)] pool page of each page; empty: 0, 1, ...
  const int32_t* page_view = nullptr;  // [pages(page_size)] not owned; when set, it replaces page_ids

  int64_t tokens() const { return pos_end - pos_begin; }
  int32_t pages(int page_size) const { return (int32_t)((tokens() + page_size - 1) / page_size); }
  int32_t pool_page(int32_t i) const {
    return page_view ? page_view[i] : page_ids.empty() ? i : page_ids[(size_t)i];
  }
  // The first n pool pages (n <= pages()); identity pages are written to `scratch`.
  std::span<const int32_t> pool_pages(int32_t n, std::vector<int32_t>& scratch) const;
};

// One layer's attention on one rank: its pages and what every rank agrees on.
struct ShardedLayer {
  const KvPool* pool = nullptr;  // this rank's pages of the layer
  KvShard shard;                 // the positions they hold
  PolicySpec policy;             // top-k selects on decode steps only (shard_topk.h)
  AttentionParams params;        // sink logits join on rank 0 only
  const PageSummaries* summaries = nullptr;  // a top-k layer's: key summaries of the pool's pages
};

// The attention plan of queries [q_pos0, q_pos0 + n_q) in blocks of q_block
// over the keys of `shard` only, naming the shard's local pages, with its
// work partition: the entries of the one-host plan that fall in the shard,
// so a rank reads exactly the pages the one host would have read there.
AttentionPlan plan_shard_attention(const PolicySpec& policy, const KvShard& shard, int page_size,
                                   int n_kv_heads, int64_t q_pos0, int n_q, int q_block);

// shard cut where the one-host kernel starts a segment (every kSegmentPages
// pages, at fixed key positions): one piece per segment it touches, in
// position order, each naming its own pool pages.
std::vector<KvShard> split_at_segments(const KvShard& shard, int page_size);

// The pieces of split_at_segments that hold a page `plan` (a plan over
// `shard`, plan_shard_attention) reads, found from the plan's entries: under
// a window the segments of its sinks and window, not every segment of the
// shard. keep_first: the shard's first piece too, read or not (it carries an
// attention sink's state).
std::vector<KvShard> segments_read(const AttentionPlan& plan, const KvShard& shard, int page_size, bool keep_first);

}  // namespace stride::dist
