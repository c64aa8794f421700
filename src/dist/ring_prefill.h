#pragma once
// Prefill across a shard group by passing KV around a ring (ring attention,
// pass-KV): every rank holds the queries of its own positions and the keys
// and values of the same positions. In W - 1 steps each rank's pages (the
// pool's page images, bit for bit, in its storage type, int8 with its
// scales) travel along the ring towards the later ranks; a rank attends to
// its own block and to every block from an earlier rank as it passes, the
// next step's transfer running while it computes, then merges the partial
// states in rank order (partial_merge.h).
//
// A block carries only the pages the receiving rank's queries can see
// (ring_block_pages): under a window or R-SWA the pages behind the window
// (but the sinks) stay home, a block no later rank can see is not sent, and
// nothing travels from the last rank back to the first.
//
// Payload per layer: each rank sends, at each step, the images of the pages
// of the block it forwards that the next rank sees (page_image_bytes: K and
// V of all kv heads of a page, the int8 scales, the slot positions), plus
// 16 * W bytes to agree on every rank's positions.
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"

namespace stride::dist {

// The pages (indices in origin's shard) that receiver's queries can see:
// none when receiver does not come after origin. Policies only lose keys as
// queries advance, so a later rank sees a subset of what this one sees.
std::vector<int32_t> ring_block_pages(const PolicySpec& policy, const KvShard& origin, const KvShard& receiver,
                                      int page_size);

// The payload `rank` sends in one layer's ring prefill (shards: every rank's, in rank order).
int64_t ring_prefill_bytes(const PolicySpec& policy, const std::vector<KvShard>& shards, int rank, int page_size,
                           int64_t page_image_bytes);

// q: [n_q, n_head, dk], the queries at positions shard.pos_begin + i, where
//    n_q = shard.tokens(); out: [n_q, n_head, dv] on every rank.
// The ranks' shards are contiguous and in rank order (rank r's pos_end is
// rank r + 1's pos_begin).
// wait_seconds (when given) grows by the time spent waiting for peers: the
// agreement on max_pages and what each ring step's transfer outlasted the
// attention computed meanwhile.
Status ring_prefill(ShardGroup& group, const ShardedLayer& layer, const float* q, int n_q, float* out,
                    ThreadPool& threads, double* wait_seconds = nullptr);

}  // namespace stride::dist
