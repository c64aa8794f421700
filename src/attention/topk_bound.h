#pragma once
// The page score of top-k selection, fast: the largest Quest upper bound of
// q . k over several query rows against one page summary,
//   max_r sum_i max(q_r[i] * min[i], q_r[i] * max[i]).
// Selection scores every present page for every query row of a kv-head group
// on each step, so at 64K context this loop, not the attention over the
// selected pages, decides what top-k saves.
namespace stride {

// rows: n_rows pointers to [dim] query rows; mn, mx: [dim] page summary.
float max_summary_bound(const float* const* rows, int n_rows, const float* mn, const float* mx,
                        int dim);

// Scalar reference of the same (summary_bound per row).
float max_summary_bound_ref(const float* const* rows, int n_rows, const float* mn,
                            const float* mx, int dim);

}  // namespace stride
