#include "dist/sharded_decode.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/plan.h"
#include "dist/partial_merge.h"
#include "dist/shard_topk.h"

namespace stride::dist {

namespace {

// The plan of q against `piece`'s keys (the selected ones under top-k).
Expected<AttentionPlan> piece_plan(const ShardedLayer& layer, const KvShard& piece,
                                   const std::optional<TopkSelection>& sel, int n_q, int64_t q_pos0) {
  const KvPoolShape& shape = layer.pool->shape();
  if (sel) return plan_shard_selection(*sel, piece, shape.page_size, shape.n_kv_heads, q_pos0 + n_q);
  return plan_shard_attention(layer.policy, piece, shape.page_size, shape.n_kv_heads, q_pos0, n_q,
                              policy_q_block(layer.policy, n_q));
}

}  // namespace

bool decode_asks_rank(const PolicySpec& policy, const std::vector<int64_t>& rank_begins, int rank, int root,
                      int64_t q_pos0, int n_q, bool sinks) {
  if (rank == root || rank_begins.empty() || (sinks && rank == 0)) return true;  // rank 0's partial carries the sink
  const int64_t begin = rank_begins[(size_t)rank];
  const int64_t end = rank + 1 < (int)rank_begins.size() ? rank_begins[(size_t)rank + 1] : q_pos0 + n_q;
  return begin < end && policy_any_visible(policy, q_pos0, q_pos0 + n_q - 1, begin, end - 1);
}

Status sharded_decode(ShardGroup& group, const ShardedLayer& layer, float* q, int n_q, int64_t q_pos0,
                      float* out, ThreadPool& threads, int root, const std::vector<int64_t>& rank_begins,
                      DecodeWork* work) {
  const KvPoolShape& shape = layer.pool->shape();
  const int n_head = layer.params.n_head, rank = group.rank(), world = group.world();
  if (!rank_begins.empty() && (int)rank_begins.size() != world)
    return InvalidArgument("sharded decode: positions of " + std::to_string(rank_begins.size()) + " ranks, not " +
                           std::to_string(world));
  const bool sinks = layer.params.sink_logits != nullptr;
  auto asked = [&](int r) { return decode_asks_rank(layer.policy, rank_begins, r, root, q_pos0, n_q, sinks); };
  if (!asked(rank)) return Status::Ok();  // it holds no key these queries see
  const size_t q_bytes = (size_t)n_q * n_head * shape.head_dim_k * sizeof(float);
  if (rank == root) {
    for (int r = 0; r < world; ++r)
      if (r != root && asked(r)) STRIDE_RETURN_IF_ERROR(group.send(r, q, q_bytes, kDecodeQueryTag));
  } else {
    STRIDE_RETURN_IF_ERROR(group.recv(root, q, q_bytes, kDecodeQueryTag));
  }
  std::optional<TopkSelection> sel;  // a top-k layer's pages, agreed by every rank
  if (topk_selects(layer.policy, n_q, false)) {
    if (n_q != 1) return Unsupported("sharded decode: top-k selection across ranks takes one query per step");
    STRIDE_ASSIGN_OR_RETURN(sel, agree_topk_selection(group, layer, q, q_pos0));
  }
  const PartialsLayout layout{n_q * n_head, shape.head_dim_v};
  if (layer.shard.tokens() <= 0) return InvalidArgument("sharded decode: a rank without keys");

  // This rank's plan over its whole shard: O(pages it lists), so under a
  // window the step costs the window, however long the shard.
  STRIDE_ASSIGN_OR_RETURN(const AttentionPlan whole, piece_plan(layer, layer.shard, sel, n_q, q_pos0));
  // The root keeps one partial per kernel segment of its shard, so that its
  // keys fold as on one host whichever rank it is; the others send one each.
  // Segments it reads no page of give empty states, which merge as nothing:
  // they are left out, but rank 0's first, which carries the sink.
  std::vector<KvShard> pieces;
  if (rank == root) pieces = segments_read(whole, layer.shard, shape.page_size, rank == 0 && sinks);
  std::vector<float> mine(layout.floats() * std::max<size_t>(1, pieces.size()));  // [pieces] partials
  if (work) {
    work->calls += 1;
    work->partials += rank == root ? (int64_t)pieces.size() : 1;
    work->pages_read += whole.n_entries();
  }
  if (rank != root) {
    AttentionParams params = layer.params;
    if (rank != 0) params.sink_logits = nullptr;  // the sink joins each row's sum once
    STRIDE_RETURN_IF_ERROR(
        attention_paged_partial(*layer.pool, whole, layer.policy, params, q, layout.view(mine.data()), threads));
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    AttentionParams params = layer.params;
    if (rank != 0 || i > 0) params.sink_logits = nullptr;
    STRIDE_ASSIGN_OR_RETURN(const AttentionPlan plan, piece_plan(layer, pieces[i], sel, n_q, q_pos0));
    STRIDE_RETURN_IF_ERROR(attention_paged_partial(*layer.pool, plan, layer.policy, params, q,
                                                   layout.view(mine.data() + i * layout.floats()), threads));
  }
  if (rank != root) return group.send(root, mine.data(), layout.bytes(), kDecodePartialTag);

  // [ranks' partials, the root's pieces in its place] in position order; a
  // rank not asked adds nothing (its state would be empty, which merges as nothing).
  std::vector<float> ordered;
  ordered.reserve(layout.floats() * (world - 1 + pieces.size()));
  for (int r = 0; r < world; ++r) {
    if (r == root) {
      ordered.insert(ordered.end(), mine.begin(), mine.begin() + (ptrdiff_t)(layout.floats() * pieces.size()));
    } else if (asked(r)) {
      ordered.resize(ordered.size() + layout.floats());
      STRIDE_RETURN_IF_ERROR(group.recv(r, ordered.data() + ordered.size() - layout.floats(), layout.bytes(), kDecodePartialTag));
    }
  }
  merge_partials(layout, ordered.data(), (int)(ordered.size() / layout.floats()), out);
  return Status::Ok();
}

}  // namespace stride::dist
