#pragma once
// The second stage of two-stage top-k selection (estimate=rerank), in the
// spirit of RetrievalAttention, ShadowKV and PQCache: Quest's bound shortlists
// `shortlist` x the budget's candidate groups, and this scores each of them
// exactly from its stored keys, so the budget goes to the groups the queries
// actually attend.
//
// A group's score is its share of the softmax mass, averaged over the rows
// (the block's queries x the kv head's group of query heads, the rows the
// bound uses), with each row's softmax taken over the keys stage 2 reads:
// the shortlist's and the fixed groups' (sinks, window):
//   score(G) = mean_r exp(lse_r(G) - lse_r(shortlist + fixed)),
//   lse_r(X) = log sum_{k in X} exp(scale * q_r . k).
// The log-sum-exp rather than the best single q.k: a page's mass is what
// reading it recovers, and several good keys count more than one. Shares
// rather than raw log-sum-exps across rows: one head with large logits
// everywhere would otherwise outrank another head's needle. When the
// shortlist holds every candidate, the scores are the oracle's exact masses
// (page_mass.h) for single-page groups.
#include <cstdint>
#include <span>
#include <vector>

#include "attention/page_logsumexp_int8.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_key_codes.h"

namespace stride {

// One page the second stage scores: its physical page, keys, the index of
// its group among the scored ones, and whether its int8 copy is current.
struct RerankVisit {
  int32_t page = 0, n = 0;
  uint32_t group = 0;
  bool int8 = false;
};

// Buffers one thread reuses across calls.
struct RerankScratch {
  std::vector<RerankVisit> visits;        // [pages scored] each group's pages together, in its order
  std::vector<RerankVisit> ordered;       // [pages scored] visits being reordered
  std::vector<uint64_t> runs;             // [scored groups] where each group's pages start
  std::vector<float> top, sum;            // [scored groups, n_rows] a group's mass per row: sum * exp(top)
  std::vector<float> page_top, page_sum;  // [n_rows] one page's, before it joins its group
  std::vector<float> row_top, row_total;  // [n_rows] each row's largest top, and its normaliser
  std::vector<float> work;                // the kernels' (page_logsumexp.h, page_logsumexp_int8.h)
  Int8Rows quantized;                     // the rows, for pages with a current int8 copy
};

// Scores of one (query block, kv head)'s shortlisted groups, as above.
//   page_table: logical -> physical page; pages < 0 (absent) and keys at
//     positions >= kv_len are left out; keys of [0, kv_len) count for every
//     row (decode steps: the step's keys are written before selection)
//   group_pages: pages per group; n_present: logical pages the block sees
//   rows: n_rows pointers to [head_dim_k] queries of kv head `head`
//   shortlist, fixed: group ids; scores: [shortlist.size()]
//   codes: null, or int8 copies of the keys: a full page whose copy is
//     current is scored from it (page_logsumexp_int8.h), any other page from
//     the pool's keys
void rerank_group_scores(const KvPool& pool, const PageKeyCodes* codes, const std::vector<int32_t>& page_table,
                         int64_t group_pages,
                         int64_t n_present, int64_t kv_len, const float* const* rows, int n_rows, int head,
                         float scale, std::span<const int64_t> shortlist, std::span<const int64_t> fixed,
                         RerankScratch& x, float* scores);

// Prompt chunks: how many of a query block's queries the second stage
// scores (with every head of the kv head's group). Scoring all of them would
// cost a good share of the attention it saves; the last query is always
// among them, so the prompt's last token (whose logits give the answer's
// first token) gets its own exact ranking.
inline constexpr int kRerankBlockQueries = 4;

// The queries of a block of nq that the second stage scores: offsets in the
// block, from the last one back at an even stride; min(nq, n_rows) of them
// (n_rows <= 0: kRerankBlockQueries).
std::vector<int> rerank_block_queries(int nq, int64_t n_rows = 0);

// mass=P over the second stage's scores (shares of each row's softmax over
// the shortlist and the fixed groups, best first): the fewest shortlisted
// groups, in [min_picks, max_picks], that with the fixed groups hold P.
int64_t rerank_mass_picks(double P, std::span<const float> shares, int64_t min_picks, int64_t max_picks);

}  // namespace stride
