#pragma once
// Prefill across a shard group by passing KV around a ring (ring attention,
// pass-KV): every rank holds the queries of its own positions and the keys
// and values of the same positions. Once a layer's keys are written on every
// rank, W - 1 ring steps carry each rank's pages (the pool's page images, bit
// for bit, in its storage type, int8 with its scales) towards the later
// ranks; a rank keeps what it received of every earlier rank for the layer
// (RingBlocks), then its queries attend, a chunk at a time, to each earlier
// rank's block and to its own pages up to the chunk's end, the partial
// states merged in rank order (partial_merge.h).
//
// Chunks and memory: the blocks are received once per layer and kept while
// the layer's chunks run, so no page travels twice, whatever the chunk. The
// price is holding, for one layer at a time, the earlier ranks' pages this
// rank sees: under dense attention one layer of every earlier shard, under
// a window or R-SWA the sinks and the window. The alternatives cost more:
// resending the blocks for every chunk multiplies the bytes by the chunks
// per shard, and running each chunk through every layer (chunk-major) makes
// a rank wait until every earlier rank has run its whole shard through the
// layer, serialising the ranks.
//
// A block carries only the pages the receiving rank's queries can see
// (ring_block_pages): under a window or R-SWA the pages behind the window
// (but the sinks) stay home, a block no later rank can see is not sent, and
// nothing travels from the last rank back to the first.
//
// Payload per layer: each rank sends, at each step, the images of the pages
// of the block it forwards that the next rank sees (page_image_bytes: K and
// V of all kv heads of a page, the int8 scales, the slot positions), plus
// 24 * W bytes to agree on every rank's positions and queries.
#include <cstdint>
#include <memory>
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

// What one rank received of the earlier ranks' pages in one layer.
class RingBlocks {
  struct Private {};

 public:
  explicit RingBlocks(Private) {}
  // Runs the layer's ring steps: layer.shard's pages (those a later rank
  // sees held) go on to the later ranks that see them, the earlier ranks'
  // come in. The ranks' shards are contiguous and in rank order (rank r's
  // pos_end is rank r + 1's pos_begin). This rank's queries begin at
  // queries_begin (the positions before it were reused from the prefix
  // cache; pos_end: none), and each rank receives only what its queries
  // see. wait_seconds (when given) grows by the time spent waiting for peers.
  static Expected<std::unique_ptr<RingBlocks>> gather(ShardGroup& group, const ShardedLayer& layer,
                                                      int64_t queries_begin, double* wait_seconds = nullptr);

  // q: [n_q, n_head, dk], the queries at positions q_pos0 + i, a run of
  // layer.shard's; out: [n_q, n_head, dv]: attention over every earlier
  // rank's keys and layer.shard's up to q_pos0 + n_q (its pages there written).
  Status attend(const ShardedLayer& layer, const float* q, int64_t q_pos0, int n_q, float* out,
                ThreadPool& threads) const;

  int64_t pages() const { return n_pages_; }  // received, all earlier ranks together

 private:
  int rank_ = 0;
  int64_t n_pages_ = 0;
  std::unique_ptr<KvPool> received_;  // the earlier ranks' pages this rank sees
  std::vector<KvShard> blocks_;       // [rank] each earlier rank's positions, page_ids into received_ (-1: unseen)
};

// The whole shard's queries in one call: q: [n_q, n_head, dk] at positions
// shard.pos_begin + i, n_q = shard.tokens(); out: [n_q, n_head, dv].
Status ring_prefill(ShardGroup& group, const ShardedLayer& layer, const float* q, int n_q, float* out,
                    ThreadPool& threads, double* wait_seconds = nullptr);

}  // namespace stride::dist
