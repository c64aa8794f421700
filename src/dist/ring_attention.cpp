#include "dist/ring_attention.h"

#include <chrono>

#include "dist/sequence_shard.h"

namespace stride::dist {

Status RingAttention::attend(int layer, const AttentionParams& params, const float* q, int n, float* out,
                             ThreadPool& threads) {
  const auto t0 = std::chrono::steady_clock::now();
  STRIDE_ASSIGN_OR_RETURN(const ShardedLayer shard_layer,
                          sequence_shard(kv_, seq_, layer, pos_begin_, pos_end_, params, false));
  const Status st = ring_prefill(group_, shard_layer, q, n, out, threads, &wait_seconds_);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace stride::dist
