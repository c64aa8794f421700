#pragma once
// Top-k (Quest) page selection across the ranks of a shard group, choosing
// exactly the pages one host would. One host ranks every page of the
// sequence by the bound of its key summary against the step's query
// (attention/topk_selector.h). Across ranks, each rank computes that bound
// for the pages it holds (bit for bit the one host's: the same summaries of
// the same keys, the same query), a max-allreduce puts every page's score on
// every rank (-inf is "not mine"), and each rank then runs the one host's
// selection over the whole score vector: the same k-th score, the same
// mass=P threshold, the same ties (equal scores go to the lower page). Each
// rank attends only the selected pages it holds.
//
// Selection runs on decode steps (one query): a top-k layer across ranks
// needs prefill=dense (Quest's setting), since ring prefill passes pages
// before every rank's scores are known (prefill=dense also rules out
// resident=N). The oracle and the rerank estimate read keys of every rank
// and are refused.
//
// Payload per layer and decode step: each rank's share of the allreduce of
// n_kv_heads * ceil(kv_len / page_size) floats (Gloo's ring allreduce moves
// about twice that per rank).
#include <cstdint>
#include <vector>

#include "attention/plan.h"
#include "attention/topk_selector.h"
#include "core/status.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"

namespace stride::dist {

// Unsupported, naming the reason, when a sharded generation or scoring
// cannot give these layer policies the one host's answers.
Status check_sharded_policies(const std::vector<PolicySpec>& policies);

// This rank's share of the page scores of one query (q: [n_head, head_dim_k])
// for keys [0, kv_len): [n_kv_heads, ceil(kv_len / page_size)], the summary
// bound of each page it holds among those the selection ranks, -inf elsewhere.
std::vector<float> shard_page_scores(const ShardedLayer& layer, const float* q, int64_t kv_len);

// The one host's selection for the query at q_pos (q on every rank), agreed
// over the group; the same on every rank.
Expected<TopkSelection> agree_topk_selection(ShardGroup& group, const ShardedLayer& layer, const float* q,
                                             int64_t q_pos);

// The selection as an attention plan over the pages `shard` holds (naming
// its pool pages), with its work partition; the other ranks' pages left out.
Expected<AttentionPlan> plan_shard_selection(const TopkSelection& sel, const KvShard& shard, int page_size,
                                             int n_kv_heads, int64_t kv_len);

}  // namespace stride::dist
