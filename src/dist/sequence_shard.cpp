#include "dist/sequence_shard.h"

#include <algorithm>
#include <string>
#include <vector>

namespace stride::dist {

Expected<ShardedLayer> sequence_shard(const KvManager& kv, KvManager::SeqId seq, int layer, int64_t pos_begin,
                                      int64_t pos_end, const AttentionParams& params, bool released_ok) {
  const std::vector<int32_t>* table = kv.sequences().page_table(seq, layer);
  if (!table) return InvalidArgument("sharded attention: unknown sequence " + std::to_string(seq));
  const int ps = kv.config().page_size;
  ShardedLayer shard_layer{&kv.pool(), KvShard{pos_begin, pos_end, {}}, kv.layer_policy(layer), params,
                           page_summaries(kv)};
  const int64_t first = pos_begin / ps, end = (pos_end + ps - 1) / ps;
  if ((int64_t)table->size() < end) return Internal("sharded attention: the shard's pages are not all written");
  if (!released_ok && std::any_of(table->begin() + first, table->begin() + end, [](int32_t p) { return p < 0; }))
    return Internal("sharded attention: a page of the shard was released");
  shard_layer.shard.page_view = table->data() + first;
  return shard_layer;
}

}  // namespace stride::dist
