#include "dist/ring_attention.h"

#include <chrono>
#include <string>

namespace stride::dist {

Status RingAttention::attend(int layer, const AttentionParams& params, const float* q, int n, float* out,
                             ThreadPool& threads) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t>* table = kv_.sequences().page_table(seq_, layer);
  if (!table) return InvalidArgument("ring attention: unknown sequence " + std::to_string(seq_));
  const int ps = kv_.config().page_size;
  ShardedLayer shard_layer{&kv_.pool(), KvShard{pos_begin_, pos_end_, {}}, kv_.layer_policy(layer), params};
  const int64_t first = pos_begin_ / ps, end = (pos_end_ + ps - 1) / ps;
  if ((int64_t)table->size() < end) return Internal("ring attention: the shard's pages are not all written");
  for (int64_t l = first; l < end; ++l) {
    const int32_t page = (*table)[(size_t)l];
    if (page < 0) return Internal("ring attention: a page of the shard was released");
    shard_layer.shard.page_ids.push_back(page);
  }
  const Status st = ring_prefill(group_, shard_layer, q, n, out, threads, &wait_seconds_);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace stride::dist
