#include "dist/ring_attention.h"

#include <chrono>
#include <string>

#include "dist/sequence_shard.h"

namespace stride::dist {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Status RingAttention::keys_written(int layer, const AttentionParams& params, ThreadPool&) {
  const auto t0 = std::chrono::steady_clock::now();
  blocks_.reset();  // the previous layer's pages go before this layer's come
  // Reused pages the shard's queries no longer see may have gone from the cache (-1).
  const bool reused = queries_begin_ > pos_begin_;
  STRIDE_ASSIGN_OR_RETURN(shard_layer_, sequence_shard(kv_, seq_, layer, pos_begin_, pos_end_, params, reused));
  STRIDE_ASSIGN_OR_RETURN(blocks_, RingBlocks::gather(group_, *shard_layer_, queries_begin_, &wait_seconds_));
  layer_ = layer;
  seconds_ += seconds_since(t0);
  return Status::Ok();
}

Status RingAttention::attend(int layer, const AttentionParams&, const float* q, int row0, int n, float* out,
                             ThreadPool& threads) {
  if (layer != layer_ || !blocks_)
    return Internal("ring attention: layer " + std::to_string(layer) + " attends before its keys were gathered");
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = blocks_->attend(*shard_layer_, q, queries_begin_ + row0, n, out, threads);
  seconds_ += seconds_since(t0);
  return st;
}

Status relay_reused_shard(ShardGroup& group, const KvManager& kv, KvManager::SeqId seq, int64_t pos_begin,
                          int64_t pos_end, double* wait_seconds) {
  for (int layer = 0; layer < kv.config().n_layer; ++layer) {
    STRIDE_ASSIGN_OR_RETURN(const ShardedLayer shard_layer,
                            sequence_shard(kv, seq, layer, pos_begin, pos_end, AttentionParams{}, true));
    STRIDE_RETURN_IF_ERROR(RingBlocks::gather(group, shard_layer, pos_end, wait_seconds).status());
  }
  return Status::Ok();
}

}  // namespace stride::dist
