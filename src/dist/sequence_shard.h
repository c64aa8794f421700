#pragma once
// One layer of a rank's KV sequence as the shard the sharded kernels read:
// the pool pages holding positions [pos_begin, pos_end) of a sequence that
// starts at pos_begin (add_sequence_at, kv_manager.h).
#include <cstdint>

#include "core/status.h"
#include "dist/kv_shard.h"
#include "kv/kv_manager.h"

namespace stride::dist {

// Internal when a page of the range is not written, or was released and
// released_ok is false. Released pages (a window's, behind its queries) stay
// in the page table as -1: the layer's policy plans no read of them. Ring
// prefill passes whole shards, so it needs every page (checked: O(shard));
// decode reads what the policy keeps, and finding the shard costs O(1).
// The shard views the sequence's page table (KvShard::page_view): valid
// until the next prepare() of the sequence adds pages.
Expected<ShardedLayer> sequence_shard(const KvManager& kv, KvManager::SeqId seq, int layer, int64_t pos_begin,
                                      int64_t pos_end, const AttentionParams& params, bool released_ok);

}  // namespace stride::dist
