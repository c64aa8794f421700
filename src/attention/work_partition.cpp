#include "attention/work_partition.h"

#include <algorithm>
#include <string>

#include "attention/plan.h"

namespace stride {

WorkPartition partition_work(const AttentionPlan& plan, int page_size, int n_kv_heads) {
  WorkPartition part;
  const int n_blocks = plan.n_blocks();
  const int64_t seg_keys = (int64_t)kSegmentPages * page_size;
  part.bh_segments.reserve((size_t)std::max(0, n_blocks) * n_kv_heads + 1);
  part.bh_segments.push_back(0);
  for (int b = 0; b < n_blocks; ++b)
    for (int h = 0; h < n_kv_heads; ++h) {
      const int64_t lo = plan.entry_begin(b, h), hi = plan.entry_end(b, h);
      for (int64_t e = lo; e < hi;) {
        const int64_t seg = plan.page_first[e] / seg_keys;
        int64_t end = e + 1;
        while (end < hi && plan.page_first[end] / seg_keys == seg) ++end;
        part.segment_end.push_back((int32_t)end);
        e = end;
      }
      part.bh_segments.push_back((int32_t)part.segment_end.size());
    }
  int64_t max_entries = 0;
  for (int b = 0; b < n_blocks; ++b)
    max_entries = std::max<int64_t>(max_entries, plan.indptr[b + 1] - plan.indptr[b]);
  // Splitting holds every segment's partial state at once: keep that bounded
  // (long chunks with few blocks run serially, with the same result).
  part.split = part.n_pairs() < kSplitBelowPairs && max_entries >= 2 * kSegmentPages &&
               (int64_t)part.n_segments() * plan.q_block <= kMaxSplitRows;
  return part;
}

Status check_work_partition(const AttentionPlan& plan, int n_kv_heads) {
  const WorkPartition& part = plan.work;
  const int64_t n_pairs = (int64_t)plan.n_blocks() * n_kv_heads;
  if ((int64_t)part.bh_segments.size() != n_pairs + 1 || part.bh_segments[0] != 0 ||
      part.bh_segments.back() != part.n_segments())
    return Internal("attention plan: the work partition does not match the plan's blocks and heads");
  for (int64_t bh = 0; bh < n_pairs; ++bh) {
    const int b = (int)(bh / n_kv_heads), h = (int)(bh % n_kv_heads);
    const int32_t s0 = part.bh_segments[bh], s1 = part.bh_segments[bh + 1];
    if (s1 < s0) return Internal("attention plan: the work partition's segment index goes backwards");
    int64_t at = plan.entry_begin(b, h);
    for (int32_t s = s0; s < s1; ++s) {
      if (part.segment_end[s] <= at)
        return Internal("attention plan: segment " + std::to_string(s) + " is empty or out of order");
      at = part.segment_end[s];
    }
    if (at != plan.entry_end(b, h)) return Internal("attention plan: the segments do not cover their pair's entries");
  }
  return Status::Ok();
}

}  // namespace stride
