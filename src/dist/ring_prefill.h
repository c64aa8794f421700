#pragma once
// Prefill across a shard group by passing KV around a ring (ring attention,
// pass-KV): every rank holds the queries of its own positions and the keys
// and values of the same positions. In W - 1 steps each rank's block of
// pages (the pool's page images, bit for bit, in its storage type) travels
// once around the ring; a rank attends to its own block and to every block
// from an earlier rank as it passes, the next step's transfer running while
// it computes, then merges the partial states in rank order (partial_merge.h).
//
// Payload per layer: each rank sends W - 1 blocks of
// 16 + max_pages * page_image_bytes bytes (max_pages: the largest shard's
// pages; page_image_bytes: K and V of all kv heads of a page, the int8
// scales, the slot positions), plus 8 bytes to agree on max_pages.
#include "core/status.h"
#include "core/thread_pool.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"

namespace stride::dist {

// q: [n_q, n_head, dk], the queries at positions shard.pos_begin + i, where
//    n_q = shard.tokens(); out: [n_q, n_head, dv] on every rank.
// The ranks' shards are contiguous and in rank order (rank r's pos_end is
// rank r + 1's pos_begin).
Status ring_prefill(ShardGroup& group, const ShardedLayer& layer, const float* q, int n_q, float* out,
                    ThreadPool& threads);

}  // namespace stride::dist
