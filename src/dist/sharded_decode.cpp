#include "dist/sharded_decode.h"

#include <vector>

#include "attention/attention_kernel.h"
#include "dist/partial_merge.h"

namespace stride::dist {

Status sharded_decode(ShardGroup& group, const ShardedLayer& layer, float* q, int n_q, int64_t q_pos0,
                      float* out, ThreadPool& threads) {
  if (layer.policy.kind == PolicyKind::TopK)
    return Unsupported("sharded decode: top-k attention is not supported across ranks yet");
  const KvPoolShape& shape = layer.pool->shape();
  const int n_head = layer.params.n_head;
  STRIDE_RETURN_IF_ERROR(group.broadcast(q, (size_t)n_q * n_head * shape.head_dim_k * sizeof(float), 0));

  const AttentionPlan plan = plan_shard_attention(layer.policy, layer.shard, shape.page_size, shape.n_kv_heads,
                                                  q_pos0, n_q, policy_q_block(layer.policy, n_q));
  AttentionParams params = layer.params;
  if (group.rank() != 0) params.sink_logits = nullptr;  // the sink joins each row's sum once
  const PartialsLayout layout{n_q * n_head, shape.head_dim_v};
  std::vector<float> mine(layout.floats());
  STRIDE_RETURN_IF_ERROR(
      attention_paged_partial(*layer.pool, plan, layer.policy, params, q, layout.view(mine.data()), threads));

  std::vector<float> all(group.rank() == 0 ? layout.floats() * group.world() : 0);
  STRIDE_RETURN_IF_ERROR(group.gather(mine.data(), layout.bytes(), all.data(), 0));
  if (group.rank() == 0) merge_partials(layout, all.data(), group.world(), out);
  return Status::Ok();
}

}  // namespace stride::dist
