#pragma once
// How the attention kernel splits one plan into work items, decided on the
// host with the plan (KvManager) so that it is plain data a device backend
// could copy, and a rule of the plan and shapes alone: the same for every
// thread count, so results never depend on the pool.
//
// A (query block, kv head) pair sums its page list in segments, each from a
// fresh softmax state, cut at fixed key positions (every kSegmentPages
// pages), and folds the segments left to right. Serially (one work item per
// pair) or split (one item per segment, folded afterwards), the same
// operations run in the same order, so splitting never changes a bit.
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace stride {

struct AttentionPlan;

struct WorkPartition {
  // Segments of pair bh = block * n_kv_heads + head: [bh_segments[bh], bh_segments[bh + 1]).
  std::vector<int32_t> bh_segments;  // [n_blocks * n_kv_heads + 1]
  // [n_segments] plan entry where each segment ends; it begins where the
  // previous segment of its pair ended (the first at the pair's entry_begin).
  std::vector<int32_t> segment_end;
  // true: every segment is a work item (decode, short chunks: few pairs, so
  // a pool of any size has work); false: one item per pair.
  bool split = false;

  int n_pairs() const { return (int)bh_segments.size() - 1; }
  int n_segments() const { return (int)segment_end.size(); }
};

constexpr int kSegmentPages = 8;        // pages per segment (256+ keys per row)
constexpr int kSplitBelowPairs = 16;    // split when a plan has fewer pairs than this
constexpr int64_t kMaxSplitRows = 1 << 14;  // segments x q_block held as partials at once

// The partition of plan over a pool of page_size-slot pages and n_kv_heads heads.
WorkPartition partition_work(const AttentionPlan& plan, int page_size, int n_kv_heads);

// O(pairs + segments): the partition covers every pair's entries exactly, in
// order, with non-empty segments; checked by the kernel before it runs.
Status check_work_partition(const AttentionPlan& plan, int n_kv_heads);

}  // namespace stride
