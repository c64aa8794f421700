#pragma once
// The page score of top-k selection, fast: the largest Quest upper bound of
// q . k over several query rows against one page summary,
//   max_r sum_i max(q_r[i] * min[i], q_r[i] * max[i]).
// Selection scores every present page for every query row of a kv-head group
// on each step, so at long context this loop, not the attention over the
// selected pages, decides what top-k saves.
#include <cstdint>

namespace stride {

// rows: n_rows pointers to [dim] query rows; mn, mx: [dim] page summary.
float max_summary_bound(const float* const* rows, int n_rows, const float* mn, const float* mx,
                        int dim);

// Many pages for every kv head in one pass over their summaries, page by
// page (each page's summaries of all heads are contiguous, so they stream
// from memory once instead of once per head); each score is bit for bit
// max_summary_bound of the same rows and summary.
//   rows: [n_kv][n_rows] pointers to [dim] query rows (kv head h's rows first)
//   sums: [pages, n_kv, 2 (min, max), dim], the PageSummaries layout
//   ids:  [n] physical pages; ids[i] < 0 is not scored (its scores are -inf)
//   out:  [n_kv, out_stride] scores, page i of head h at out[h * out_stride + i]
//   out_stride: 0 means n
void max_summary_bounds(const float* const* rows, int n_rows, const float* sums, const int32_t* ids,
                        int64_t n, int n_kv, int dim, float* out, int64_t out_stride = 0);

// Scalar reference of max_summary_bound (summary_bound per row).
float max_summary_bound_ref(const float* const* rows, int n_rows, const float* mn,
                            const float* mx, int dim);

}  // namespace stride
