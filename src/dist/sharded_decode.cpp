#include "dist/sharded_decode.h"

#include <vector>

#include "attention/attention_kernel.h"
#include "dist/partial_merge.h"

namespace stride::dist {

namespace {

// The partial state of q against `shard`'s keys: part: [layout.floats()].
Status shard_partial(const ShardedLayer& layer, const KvShard& shard, const AttentionParams& params, const float* q,
                     int n_q, int64_t q_pos0, const PartialsLayout& layout, float* part, ThreadPool& threads) {
  const KvPoolShape& shape = layer.pool->shape();
  const AttentionPlan plan = plan_shard_attention(layer.policy, shard, shape.page_size, shape.n_kv_heads, q_pos0,
                                                  n_q, policy_q_block(layer.policy, n_q));
  return attention_paged_partial(*layer.pool, plan, layer.policy, params, q, layout.view(part), threads);
}

}  // namespace

Status sharded_decode(ShardGroup& group, const ShardedLayer& layer, float* q, int n_q, int64_t q_pos0,
                      float* out, ThreadPool& threads, int root) {
  if (layer.policy.kind == PolicyKind::TopK)
    return Unsupported("sharded decode: top-k attention is not supported across ranks yet");
  const KvPoolShape& shape = layer.pool->shape();
  const int n_head = layer.params.n_head, rank = group.rank(), world = group.world();
  STRIDE_RETURN_IF_ERROR(group.broadcast(q, (size_t)n_q * n_head * shape.head_dim_k * sizeof(float), root));
  const PartialsLayout layout{n_q * n_head, shape.head_dim_v};

  // The root keeps one partial per kernel segment of its shard, so that its
  // keys fold as on one host whichever rank it is; the others send one each.
  const std::vector<KvShard> pieces =
      rank == root ? split_at_segments(layer.shard, shape.page_size) : std::vector<KvShard>{layer.shard};
  if (pieces.empty()) return InvalidArgument("sharded decode: a rank without keys");
  std::vector<float> mine(layout.floats() * pieces.size());  // [pieces] partials
  for (size_t i = 0; i < pieces.size(); ++i) {
    AttentionParams params = layer.params;
    if (rank != 0 || i > 0) params.sink_logits = nullptr;  // the sink joins each row's sum once
    STRIDE_RETURN_IF_ERROR(shard_partial(layer, pieces[i], params, q, n_q, q_pos0, layout,
                                         mine.data() + i * layout.floats(), threads));
  }

  std::vector<float> all(rank == root ? layout.floats() * world : 0);  // [world] the first partial of each
  STRIDE_RETURN_IF_ERROR(group.gather(mine.data(), layout.bytes(), all.data(), root));
  if (rank != root) return Status::Ok();
  std::vector<float> ordered;  // [ranks' partials, the root's pieces in its place] in position order
  ordered.reserve(layout.floats() * (world - 1 + pieces.size()));
  for (int r = 0; r < world; ++r) {
    const float* from = r == root ? mine.data() : all.data() + (size_t)r * layout.floats();
    const size_t n_parts = r == root ? pieces.size() : 1;
    ordered.insert(ordered.end(), from, from + n_parts * layout.floats());
  }
  merge_partials(layout, ordered.data(), (int)(ordered.size() / layout.floats()), out);
  return Status::Ok();
}

}  // namespace stride::dist
