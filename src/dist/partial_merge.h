#pragma once
// Partial attention of one shard of the keys, as one flat float buffer that
// travels between ranks as it is, and the merge of several shards' partials
// into the attention output. The merge folds the shards' softmax states with
// the kernel's own softmax_merge in rank (position) order from an empty
// state, then normalises as the kernel does. The kernel folds its segments
// (work_partition.h) the same way, so when every rank after the first holds
// exactly one segment of a query's keys, the query gets the bits the
// one-host kernel gives; otherwise the grouping differs by rounding only.
#include <cstddef>
#include <vector>

#include "attention/attention_kernel.h"

namespace stride::dist {

// rows: query x head rows (n_q * n_head); dv: value width.
// Buffer: [rows] m | [rows] d | [rows, dv] o (unnormalised).
struct PartialsLayout {
  int rows = 0;
  int dv = 0;
  size_t floats() const { return (size_t)rows * (2 + (size_t)dv); }
  size_t bytes() const { return floats() * sizeof(float); }
  // Kernel output pointers into a buffer of floats() values.
  AttentionPartialOut view(float* buf) const {
    return {buf, buf + rows, buf + 2 * (size_t)rows};
  }
};

// parts: [n_parts, layout.floats()] in rank order; out: [rows, dv].
void merge_partials(const PartialsLayout& layout, const float* parts, int n_parts, float* out);

}  // namespace stride::dist
