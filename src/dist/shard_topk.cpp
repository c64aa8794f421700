#include "dist/shard_topk.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "attention/topk_bound.h"
#include "attention/work_partition.h"

namespace stride::dist {

Status check_sharded_policies(const std::vector<PolicySpec>& policies) {
  for (const PolicySpec& p : policies) {
    if (p.kind != PolicyKind::TopK) continue;
    const std::string what = "top-k attention across shard ranks (" + policy_to_string(p) + ")";
    if (!p.prefill_dense) return Unsupported(what + " selects on decode steps only: add prefill=dense");
    if (p.oracle_estimate || p.rerank_estimate)
      return Unsupported(what + ": estimate=oracle and estimate=rerank read other ranks' keys");
  }
  return Status::Ok();
}

std::vector<float> shard_page_scores(const ShardedLayer& layer, const float* q, int64_t kv_len) {
  const KvPoolShape& shape = layer.pool->shape();
  const int ps = shape.page_size, n_kv = shape.n_kv_heads, dim = shape.head_dim_k;
  const int n_head = layer.params.n_head, group = n_head / n_kv;
  const int64_t n_logical = (kv_len + ps - 1) / ps;
  // The pages the one host scores for a query at kv_len - 1 (select_topk):
  // every present page under mass=P, else those before the local window.
  const TopkBlockBudget budget = topk_block_budget(layer.policy, ps, n_logical, kv_len - 1, kv_len - 1);
  const int64_t n_scored =
      layer.policy.mass > 0.0 ? n_logical : std::min(n_logical, budget.geo.local_from * budget.geo.group_pages);
  std::vector<int32_t> ids((size_t)n_logical, -1);  // [n_logical] this rank's pool pages, -1: not scored here
  const int64_t first = layer.shard.pos_begin / ps;
  for (int64_t L = first; L < std::min(n_scored, (layer.shard.pos_end + ps - 1) / ps); ++L)
    ids[(size_t)L] = layer.shard.pool_page((int32_t)(L - first));
  std::vector<const float*> rows;  // [n_kv][group] the query heads of each kv head, as select_topk gathers them
  for (int h = 0; h < n_kv; ++h)
    for (int j = 0; j < group; ++j) rows.push_back(q + ((int64_t)h * group + j) * dim);
  std::vector<float> scores((size_t)n_kv * n_logical);  // [n_kv, n_logical]
  max_summary_bounds(rows.data(), group, layer.summaries->data(), ids.data(), n_logical, n_kv, dim, scores.data());
  return scores;
}

Expected<TopkSelection> agree_topk_selection(ShardGroup& group, const ShardedLayer& layer, const float* q,
                                             int64_t q_pos) {
  if (!layer.summaries) return Internal("sharded top-k: the layer has no page summaries");
  const KvPoolShape& shape = layer.pool->shape();
  const int64_t kv_len = q_pos + 1;
  std::vector<float> scores = shard_page_scores(layer, q, kv_len);
  if (group.world() > 1) STRIDE_RETURN_IF_ERROR(group.allreduce_max(scores.data(), scores.size()));
  // Every page is present somewhere: the table only says so (select_topk
  // reads no summary when given every page's score).
  const std::vector<int32_t> everywhere(scores.size() / shape.n_kv_heads, 0);
  return select_topk(layer.policy, everywhere, shape.page_size, kv_len, q_pos, 1, 1, *layer.summaries, q,
                     layer.params.n_head, shape.n_kv_heads, nullptr, 0,
                     attention_scale(layer.params, shape.head_dim_k), nullptr, &scores, nullptr);
}

Expected<AttentionPlan> plan_shard_selection(const TopkSelection& sel, const KvShard& shard, int page_size,
                                             int n_kv_heads, int64_t kv_len) {
  const int64_t first = shard.pos_begin / page_size, end = (shard.pos_end + page_size - 1) / page_size;
  // Positions counted from the shard's first key, so that topk_plan reads a
  // table of the shard's pages only, not one as long as the sequence.
  const int64_t shift = first * page_size;
  TopkSelection mine = sel;
  mine.q_pos0 = sel.q_pos0 - shift;
  mine.pages.clear();
  mine.next_pages.clear();
  mine.head_indptr.assign(1, 0);
  for (size_t list = 0; list + 1 < sel.head_indptr.size(); ++list) {
    for (int32_t e = sel.head_indptr[list]; e < sel.head_indptr[list + 1]; ++e)
      if (sel.pages[(size_t)e] >= first && sel.pages[(size_t)e] < end) mine.pages.push_back(sel.pages[(size_t)e] - first);
    mine.head_indptr.push_back((int32_t)mine.pages.size());
  }
  std::vector<int32_t> identity;
  const std::span<const int32_t> pages = shard.pool_pages((int32_t)(end - first), identity);
  const std::vector<int32_t> table(pages.begin(), pages.end());  // [shard pages] their pool pages
  STRIDE_ASSIGN_OR_RETURN(AttentionPlan plan, topk_plan(mine, table, page_size, kv_len - shift));
  plan.q_pos0 += shift;
  for (int64_t& key : plan.page_first) key += shift;
  plan.work = partition_work(plan, page_size, n_kv_heads);
  return plan;
}

}  // namespace stride::dist
