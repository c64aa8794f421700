#pragma once
// Attention policies. A policy is one predicate over (query position, key
// position); the same predicate masks scores inside the kernel and decides
// which KV pages a sequence may release. There is no second source of truth.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stride {

enum class PolicyKind { Dense, Window, RSWA, TopK, Strided };
// How many kinds there are: per-kind arrays are sized by it.
inline constexpr int kPolicyKinds = 5;
// "dense", "window", "rswa", "topk", "strided".
const char* policy_kind_name(PolicyKind k);

// How an R-SWA layer positions its sink tokens.
//   Absolute: every key keeps its position in the text (as Mistral does).
//   CacheRelative: positions are taken within the cache, as in StreamingLLM,
//     so the query never sees a distance beyond sinks + window and decoding
//     past the training length stays in distribution. The default.
enum class PositionMode { Absolute, CacheRelative };

// TopK (neighbors=...): which neighbouring groups each picked group brings
// with it, so a sentence cut by a page boundary is read whole.
enum class PickNeighbors { None, Before, After, Both };

// Token positions [first, last], both included.
struct TokenRange {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const TokenRange&) const = default;
};

struct PolicySpec {
  PolicyKind kind = PolicyKind::Dense;
  int64_t window = 0;  // Window, RSWA, Strided: query p sees keys (p - window, p]
                       // TopK: the local pages always read cover (p - window, p]
  int64_t sinks = 0;   // RSWA: keys [0, sinks) are always visible
                       // Strided: the G global tokens; TopK: the sink pages always read cover [0, sinks)
  PositionMode positions = PositionMode::CacheRelative;
  // TopK: the share of pages NOT read (0 = dense). The pages read are chosen
  // per query (or query block) and kv head by the plan (page summaries), not
  // by the predicate: for TopK the predicate is causal and no page is ever released.
  double sparsity = 0.0;
  // TopK prefill: choose pages once per block of up to 32 queries instead of
  // per query. Prefill attention is then about twice as fast, but the pages a
  // query reads depend on how its prompt was cut into chunks (batching, prefix
  // hits), so logits are no longer the same whatever the schedule.
  bool select_per_block = false;
  // TopK: selection runs only on prompt chunks (sparse prefill); decode steps
  // and speculative verification read every page, so the KV the prompt left
  // is what dense decoding would read.
  bool decode_dense = false;
  // TopK: prompt chunks read every page and selection runs only on decode
  // steps (Quest's setting): the prompt's KV and logits are dense's.
  bool prefill_dense = false;
  // TopK (last=dense): the prompt chunk that ends the prompt (the one whose
  // last token's logits are asked for) reads every page. It holds the
  // question, whose tokens carry the retrieved answer to the decode steps.
  bool last_chunk_dense = false;
  // TopK: rank pages by their exact attention mass for the step's queries
  // instead of an estimate: the oracle a selector is measured against at the
  // same reads. Every key is scored, so it runs on decode steps only.
  bool oracle_estimate = false;
  // TopK, two-stage (estimate=rerank): the bound ranks the candidates and
  // keeps `shortlist` x the budget's picks; those pages are then ranked by
  // their exact softmax mass from their stored keys (attention/topk_rerank.h).
  // On decode steps (prefill=dense) under a fixed budget. On prompt chunks
  // (decode=dense) the first stage is the pooled estimate, the second scores
  // a few of each block's queries (its last among them), and under mass=P the
  // picks are the fewest shortlisted groups holding P of their exact mass.
  // shortlist is 0 unless rerank.
  bool rerank_estimate = false;
  double shortlist = 0.0;
  // TopK, estimate=rerank (rerank_keys=int8): the second stage scores the
  // int8 copy of each full page's keys (kv/store/page_key_codes.h) with the
  // queries quantized once per step, instead of the pool's keys.
  bool rerank_int8 = false;
  // estimate=rerank on prompt chunks (rows=N): how many of each block's
  // queries the second stage scores (0: kRerankBlockQueries; the block's
  // size or more: every query, the block's exact mass over the shortlist).
  int64_t rerank_rows = 0;
  // TopK: score pages with each query head's mean query over the block
  // instead of every query's bound (cheaper by the block size; an estimate,
  // not a bound, as block-sparse prefill methods use).
  bool pooled_estimate = false;
  // TopK: each group picked by score also reads the group before it, after
  // it or both (sinks and window are fixed and bring none). The neighbours
  // are read beside the budget's picks, not counted in it.
  PickNeighbors neighbors = PickNeighbors::None;
  // TopK: selection granularity in tokens (0: the page size; else a multiple of it).
  // Strided: the size of the blocks the stride counts.
  int64_t block = 0;
  // TopK: the most pages of one layer of one sequence kept in the KV pool
  // (0: all). With an offload tier the least recently read pages beyond it
  // live in the tier and come back when selected (kv/topk_hot_set.cpp).
  int64_t resident = 0;
  // TopK adaptive (top-p): mass > 0 reads, per query (block) and kv head, the
  // fewest groups whose estimated share of the softmax mass reaches `mass`
  // (sparsity is then unused), picking at least min_tokens and at most
  // max_tokens (0: no cap) of keys besides the sinks and the local window.
  double mass = 0.0;
  int64_t min_tokens = 0;
  int64_t max_tokens = 0;
  // TopK (heads=FILE): per-head budgets from a calibration profile
  // (engine/head_profile.h): the top `retrieval` share of (layer, kv head)s by
  // distant mass split the picks of all (attention/head_budget.h); the others
  // read sinks + window only. With decode=dense (sparse prefill) the
  // retrieval heads instead read every page of prompt chunks and the others
  // select under the policy's budget (DuoAttention's retrieval heads). The engine fills head_shares ([n_layer *
  // n_kv_heads], < 0 for layers not top-k) and head_layer (this layer's row)
  // from the file; empty: every head picks alike.
  std::string heads_file;
  double retrieval = 0.0;
  std::vector<double> head_shares;
  int head_layer = -1;
  // TopK (dense_layers=A-B+C): these layers attend as dense does, on prompt
  // chunks and decode steps alike (resolve_layer_policies makes them Dense;
  // a KvManager given this spec directly does not). Sorted layer indices;
  // empty: every layer selects.
  std::vector<int> dense_layers;
  int64_t stride = 0;  // Strided: every stride-th block (block index % stride == 0) is visible
  // Strided: further global tokens, sorted, disjoint and not adjacent; every
  // later query sees them (and the pages holding them are never released).
  std::vector<TokenRange> global_ranges;

  bool operator==(const PolicySpec&) const = default;
};

// "dense" | "window:size=W" | "rswa:sinks=S,window=W[,pos=rel|abs]"
// | "topk[:sparsity=R|mass=P[,min=T][,max=T]][,block=B][,sinks=S][,window=W][,resident=N][,select=query|block]
//        [,decode=dense|prefill=dense][,last=dense|topk][,estimate=bound|pooled|oracle|rerank][,shortlist=F][,rerank_keys=pool|int8][,rows=N]
//        [,heads=FILE[,retrieval=F]][,dense_layers=A-B[+C...]][,neighbors=none|before|after|both]"
//   heads=FILE (per-head budgets, retrieval=F of the heads, default 0.5) needs sparsity=R and no resident=N,
//   or decode=dense (then mass=P too: the retrieval heads read every page of prompt chunks);
//   rows=N (queries per prompt block that rerank scores) needs estimate=rerank and decode=dense;
//   estimate=oracle needs prefill=dense and sparsity=R; estimate=rerank
//   (shortlist=F, F >= 1, default 4) needs prefill=dense and sparsity=R, or
//   decode=dense (then mass=P too); rerank refuses resident=N; rerank_keys=int8
//   (its second stage on int8 copies of the keys) needs estimate=rerank; last=dense
//   (the prompt's last chunk reads every page) needs prompt chunks to select;
//   dense_layers=L (layers L attend densely; "none" for no layer) refuses prefill=dense;
//   neighbors=before|after|both: each group picked by score also reads the group(s) beside it
// | "sparse_prefill[:mass=P|sparsity=R,...]": topk with decode=dense, select=block,
//        estimate=pooled, last=dense, window=512 and mass=0.95 unless given (last=topk: every
//        chunk selects; window=32: one page back, the definition before 2026-12-07)
// | "strided:window=W,stride=S[,globals=G][,block=B][,ranges=A-B[+C-D...]]"
Expected<PolicySpec> parse_policy(std::string_view text);
std::string policy_to_string(const PolicySpec& p);
// "none", "before", "after", "both".
const char* pick_neighbors_name(PickNeighbors n);

// Does a top-k layer select pages for a step of n_new tokens? A decode step
// is one token, or a step whose tail may be dropped (speculative
// verification); every other step is a prompt chunk. decode=dense reads every
// page on decode steps, prefill=dense on prompt chunks, last=dense on the
// chunk that ends the prompt (ends_prompt: the step asks for its last
// token's logits only).
inline bool topk_selects(const PolicySpec& p, int n_new, bool may_truncate, bool ends_prompt = false) {
  if (p.kind != PolicyKind::TopK) return false;
  const bool decode_step = n_new <= 1 || may_truncate;
  if (decode_step) return !p.decode_dense;
  return !p.prefill_dense && !(ends_prompt && p.last_chunk_dense);
}

// Does k_pos fall in one of the strided policy's global ranges?
inline bool in_global_range(const PolicySpec& p, int64_t k_pos) {
  for (const TokenRange& r : p.global_ranges)
    if (k_pos >= r.first && k_pos <= r.last) return true;
  return false;
}

// The predicate: may the query at q_pos attend the key at k_pos? (causal included)
inline bool policy_attends(const PolicySpec& p, int64_t q_pos, int64_t k_pos) {
  if (k_pos > q_pos) return false;
  switch (p.kind) {
    case PolicyKind::Dense: return true;
    case PolicyKind::Window: return k_pos > q_pos - p.window;
    case PolicyKind::RSWA: return k_pos < p.sinks || k_pos > q_pos - p.window;
    // Causal only: the pages a top-k query reads are the plan's choice.
    case PolicyKind::TopK: return true;
    case PolicyKind::Strided:
      return k_pos < p.sinks || k_pos > q_pos - p.window || (k_pos / p.block) % p.stride == 0 ||
             in_global_range(p, k_pos);
  }
  return false;
}

// May any future query (position >= next_q_pos) still attend k_pos? Every
// policy here only loses keys as queries advance, so this is the predicate
// evaluated at the earliest future query.
inline bool policy_keeps(const PolicySpec& p, int64_t k_pos, int64_t next_q_pos) {
  return policy_attends(p, next_q_pos > k_pos ? next_q_pos : k_pos, k_pos);
}

// Cache-relative mode: how far the query at q_pos is shifted back when it
// looks at sink keys. Window keys keep their true distance to the query;
// sinks are seen as if they sat right before the window.
inline int64_t rswa_sink_shift(const PolicySpec& p, int64_t q_pos) {
  if (p.kind != PolicyKind::RSWA || p.positions != PositionMode::CacheRelative) return 0;
  const int64_t shift = q_pos - p.window + 1 - p.sinks;
  return shift > 0 ? shift : 0;
}

}  // namespace stride
