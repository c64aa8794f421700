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
#include "kv/store/page_summary.h"

namespace stride {
class KvPool;
class PageKeyCodes;
class ThreadPool;
class WorkerScratch;
}

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

// What one query block [q_first, q_last] reads per kv head, in groups: the
// fixed ones (sinks + local) and at most `keep` in all, so up to
// keep - n_fixed are picked by score (exactly that many under a fixed
// budget; between min_picks and that many under mass=P). n_logical: pages
// the layer has for this step.
struct TopkBlockBudget {
  TopkGeometry geo;
  int64_t n_fixed = 0;
  int64_t keep = 0;
  int64_t min_picks = 0;
};

// mass=P: how many of the ranked candidates to read. est_fixed: the fixed
// groups' estimated log-masses; est_ranked: the candidates', best first.
// Returns the fewest k in [min_picks, max_picks] whose groups, with the
// fixed ones, hold at least P of the estimated mass exp(est) of all groups.
int64_t topk_mass_picks(double P, const std::vector<float>& est_fixed,
                        const std::vector<float>& est_ranked, int64_t min_picks, int64_t max_picks);
TopkBlockBudget topk_block_budget(const PolicySpec& p, int page_size, int64_t n_logical,
                                  int64_t q_first, int64_t q_last);

// Pages outside the pool that selection still scores (the top-k hot set,
// kv/topk_hot_set.cpp): logical page L with page_table[L] < 0 and
// tier_key[L] != 0 has its image in the offload tier and its summary here.
struct TopkColdPages {
  const std::vector<uint64_t>* tier_key = nullptr;  // [logical pages] 0: not in the tier
  const float* summaries = nullptr;                 // [logical pages, n_kv_heads, 2, head_dim]
};

// The logical pages each (query block, kv head) reads, before they are
// mapped to physical pages.
struct TopkSelection {
  int q_block = 1;
  int n_q = 0;
  int64_t q_pos0 = 0;
  int n_kv_heads = 0;
  std::vector<int32_t> head_indptr;  // [n_blocks * n_kv_heads + 1]
  std::vector<int64_t> pages;        // [entries] logical pages, ascending per (block, kv head)
  // Logical pages of the groups ranked right after the cut (up to n_next per
  // block and kv head): the likely picks of the next step, for prefetching.
  std::vector<int64_t> next_pages;
  int n_blocks() const { return n_kv_heads > 0 ? ((int)head_indptr.size() - 1) / n_kv_heads : 0; }
};

// q: [n_q, n_head, head_dim] (RoPE applied), for queries at q_pos0 + i.
// cold: null, or pages in the tier to score as if present.
// scale: the softmax scale, for mass=P's estimate (0: 1/sqrt(head_dim)).
// scratch: the calling worker's (core/worker_scratch.h); null: buffers of this
// call only (tests and tools).
// exact: null, or page scores that replace the summaries' bounds for ranking
// ([n_kv_heads, ceil(kv_len / page_size)], higher first: the oracle's
// attention masses, attention/page_mass.h).
// keys: the pool holding the pages, for estimate=rerank (its second stage
// scores the shortlist from their keys, attention/topk_rerank.h); null: no
// second stage.
// key_codes: null, or int8 copies of the pool's keys for that second stage
// (rerank_keys=int8; pages without a current copy are scored from the pool).
// threads: null, or the caller's pool (the caller is its worker 0, and
// scratch is worker 0's): the page bounds and the kv heads' second stages
// are split over its threads, with the selection one thread makes.
TopkSelection select_topk(const PolicySpec& p, const std::vector<int32_t>& page_table, int page_size,
                          int64_t kv_len, int64_t q_pos0, int n_q, int q_block,
                          const PageSummaries& sums, const float* q, int n_head, int n_kv_heads,
                          const TopkColdPages* cold = nullptr, int n_next = 0, float scale = 0.f,
                          WorkerScratch* scratch = nullptr, const std::vector<float>* exact = nullptr,
                          const KvPool* keys = nullptr, const PageKeyCodes* key_codes = nullptr,
                          ThreadPool* threads = nullptr);

// The plan of a selection over the current page table; a selected page not
// in the pool is an Internal error (never skipped). The plan always carries
// per-kv-head lists (head_indptr).
Expected<AttentionPlan> topk_plan(const TopkSelection& sel, const std::vector<int32_t>& page_table,
                        int page_size, int64_t kv_len);

// select_topk over the pool's pages, then topk_plan.
Expected<AttentionPlan> plan_topk(const PolicySpec& p, const std::vector<int32_t>& page_table, int page_size,
                        int64_t kv_len, int64_t q_pos0, int n_q, int q_block,
                        const PageSummaries& sums, const float* q, int n_head, int n_kv_heads,
                        float scale = 0.f, WorkerScratch* scratch = nullptr,
                        const std::vector<float>* exact = nullptr, const KvPool* keys = nullptr,
                        const PageKeyCodes* key_codes = nullptr, ThreadPool* threads = nullptr);

}  // namespace stride
