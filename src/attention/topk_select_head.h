#pragma once
// One kv head's part of a top-k block selection (topk_selector.h): rank the
// candidate groups by their bound, re-rank the shortlist (estimate=rerank),
// cut at the budget and list the pages read. Kv heads are independent given
// the block's page scores, so a step's heads may be selected on different
// threads, each with its own TopkHeadScratch.
#include <cstdint>
#include <vector>

#include "attention/policy.h"
#include "attention/topk_rerank.h"
#include "attention/topk_selector.h"

namespace stride {

// What every kv head of one query block reads; pointers borrowed for the call.
struct TopkBlockInputs {
  const PolicySpec* policy = nullptr;
  TopkBlockBudget budget;
  bool ranks = false;         // some groups are picked by score (else every group is read)
  int64_t n_present = 0;      // logical pages the block sees
  int64_t n_scored = 0;       // pages with a score per kv head
  int64_t kv_len = 0, q_last = 0;
  int page_size = 0, n_kv_heads = 0, n_next = 0;
  float scale = 0.f;
  const std::vector<int32_t>* page_table = nullptr;
  const TopkColdPages* cold = nullptr;
  const float* page_scores = nullptr;           // [n_kv_heads, n_scored]
  const float* log_keys = nullptr;              // [group_pages + 1] log(j * page_size)
  const std::vector<int64_t>* head_picks = nullptr;  // [n_kv_heads] heads=FILE's picks, or empty
  // estimate=rerank's second stage: null keys, none.
  const KvPool* keys = nullptr;
  const PageKeyCodes* key_codes = nullptr;
  const float* const* exact_rows = nullptr;  // [n_kv_heads][n_exact_rows]
  int n_exact_rows = 0;
  int64_t exact_len = 0;
};

// Buffers one kv head's selection reuses across calls on the same thread.
struct TopkHeadScratch {
  std::vector<float> group_scores;  // [n_groups]
  std::vector<uint64_t> ranked;     // [candidates] rank_key, best first up to the cut
  std::vector<uint8_t> chosen;      // [n_groups]
  std::vector<float> est_fixed, est_ranked;
  std::vector<int64_t> shortlist, fixed;  // estimate=rerank's groups
  std::vector<float> exact;               // [shortlist] their stage-2 scores
  RerankScratch rerank;
};

// Appends kv head h's logical pages (ascending) to `pages`, and the groups
// ranked right after the cut to `next_pages`.
void select_head_pages(const TopkBlockInputs& in, int h, TopkHeadScratch& x, std::vector<int64_t>& pages,
                       std::vector<int64_t>& next_pages);

// Whether the heads' selections are worth a dispatch over a pool's threads:
// the second stage reads keys; a bound-only ranking takes microseconds.
bool head_selection_is_heavy(const TopkBlockInputs& in);

}  // namespace stride
