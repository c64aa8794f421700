#pragma once
// Exact attention mass per KV page, for tracing what top-k selection missed:
// the softmax share each page's keys take of a query's attention, computed
// with a plain scalar loop (slow on purpose: it runs only when tracing).
#include <cstdint>
#include <vector>

#include "kv/store/kv_pool.h"

namespace stride {

// rows: n_rows pointers to [dim] queries (RoPE applied); keys: [n_keys, dim]
// f32, key i at position i, all visible to every row; scale: softmax scale.
// Returns [ceil(n_keys / page_size)]: per page, the mean over the rows of
// each row's softmax mass on the page's keys (so the pages sum to 1).
std::vector<double> exact_page_mass(const float* const* rows, int n_rows, int dim, float scale,
                                    const float* keys, int64_t n_keys, int page_size);

// One kv head's keys at positions [0, n_keys) as f32 [n_keys, head_dim_k],
// read through the page table from any storage (f16, f32, int8 dequantized).
// Positions whose page is absent (page_table[L] < 0) read as zeros and are
// listed in `absent` (logical pages), so callers can leave them out.
std::vector<float> gather_head_keys(const KvPool& pool, const std::vector<int32_t>& page_table, int64_t n_keys,
                                    int head, std::vector<int64_t>* absent = nullptr);

// The oracle selector's page scores (estimate=oracle): for each kv head, the
// exact softmax mass of every logical page, averaged over the step's queries
// and the head's group of query heads. q: [n_q, n_head, head_dim] (RoPE
// applied); every key in [0, kv_len) counts as visible (decode steps).
// Returns [n_kv_heads, ceil(kv_len / page_size)]; absent pages get -1, below
// any mass.
std::vector<float> oracle_page_scores(const KvPool& pool, const std::vector<int32_t>& page_table, int64_t kv_len,
                                      const float* q, int n_q, int n_head, int n_kv_heads, float scale);

}  // namespace stride
