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
  STRIDE_ASSIGN_OR_RETURN(shard_layer_, sequence_shard(kv_, seq_, layer, pos_begin_, pos_end_, params, false));
  STRIDE_ASSIGN_OR_RETURN(blocks_, RingBlocks::gather(group_, *shard_layer_, &wait_seconds_));
  layer_ = layer;
  seconds_ += seconds_since(t0);
  return Status::Ok();
}

Status RingAttention::attend(int layer, const AttentionParams&, const float* q, int row0, int n, float* out,
                             ThreadPool& threads) {
  if (layer != layer_ || !blocks_)
    return Internal("ring attention: layer " + std::to_string(layer) + " attends before its keys were gathered");
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = blocks_->attend(*shard_layer_, q, pos_begin_ + row0, n, out, threads);
  seconds_ += seconds_since(t0);
  return st;
}

}  // namespace stride::dist
