#include "dist/decode_attention.h"

#include <vector>

#include "dist/sequence_shard.h"
#include "dist/sharded_decode.h"

namespace stride::dist {

Status DecodeAttention::attend(int layer, const AttentionParams& params, const float* q, int row0, int n,
                               float* out, ThreadPool& threads) {
  if (row0 != 0) return InvalidArgument("sharded decode: a step in one chunk");
  // The step's keys are written, not yet committed: they follow length().
  const int64_t q_pos0 = kv_.length(seq_);
  STRIDE_ASSIGN_OR_RETURN(const ShardedLayer shard_layer,
                          sequence_shard(kv_, seq_, layer, pos_begin_, q_pos0 + n, params, true));
  std::vector<float> queries(q, q + (size_t)n * params.n_head * kv_.pool().shape().head_dim_k);
  return sharded_decode(group_, shard_layer, queries.data(), n, q_pos0, out, threads, root_, rank_begins_, work_);
}

Status answer_decode_step(ShardGroup& group, const Transformer& model, const KvManager& kv, KvManager::SeqId seq,
                          int64_t pos_begin, int64_t pos_end, int n_q, int64_t q_pos0, int root,
                          const std::vector<int64_t>& rank_begins, ThreadPool& threads, DecodeWork* work) {
  const ModelConfig& c = model.config();
  std::vector<float> q;  // [n_q, n_head, head_dim_k], the root's
  for (int layer = 0; layer < c.n_layer; ++layer) {
    const AttentionParams params = model.attention_params(layer);
    STRIDE_ASSIGN_OR_RETURN(const ShardedLayer shard_layer,
                            sequence_shard(kv, seq, layer, pos_begin, pos_end, params, true));
    q.assign((size_t)n_q * params.n_head * kv.pool().shape().head_dim_k, 0.f);
    STRIDE_RETURN_IF_ERROR(sharded_decode(group, shard_layer, q.data(), n_q, q_pos0, nullptr, threads, root, rank_begins, work));
  }
  return Status::Ok();
}

}  // namespace stride::dist
