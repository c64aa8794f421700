#pragma once
// Scoring one prompt across a shard group (`stride score --shard-world`):
// every rank runs the positions of its shard through every layer as one
// engine step, RoPE at their true positions, writing the KV pages of its
// own positions only; at each layer its queries attend causally to its own
// keys and to the earlier ranks' by ring prefill (ring_attention.h). Each
// rank computes the logits of its own positions; rank 0 gathers them.
//
// A shard is one step because its queries need every earlier rank's keys of
// the layer, which exist only once those ranks ran their whole shard through
// it; the step runs layer by layer in chunks (run_shard_prefill), so beside
// the shard's residual stream the activations hold a chunk.
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"
#include "engine/engine.h"
#include "kv/shard_cost.h"

namespace stride::dist {

// The positions `rank` holds of n tokens: contiguous runs of whole pages in
// rank order, cut by shard_boundaries (kv/shard_layout.h; shard_tokens a
// resolved S, 0 the balanced cut, which weighs each rank's prefill by cost).
// InvalidArgument when a rank would hold none.
Expected<KvShard> shard_positions(int64_t n, int world, int rank, int page_size, int64_t shard_tokens,
                                  const ShardCostModel& cost);
// shard_positions of `rank`, refused alike on every rank when any rank
// would hold none (so every rank can check before it connects).
Expected<KvShard> every_rank_positions(int64_t n, int world, int rank, int page_size, int64_t shard_tokens,
                                       const ShardCostModel& cost);
// The cost model the engine's model and layer policies give (kv/shard_cost.h).
ShardCostModel engine_shard_cost(const Engine& engine);

struct ShardScore {
  KvShard shard;               // this rank's positions
  std::vector<float> logits;   // rank 0: [n, n_vocab] of the whole prompt; other ranks: empty
  double forward_seconds = 0;  // this rank's step, wall time
  double forward_cpu_seconds = 0;  // CPU time of this process during the step (every thread)
  double ring_seconds = 0;     // of which in ring prefill (every layer)
  double wait_seconds = 0;     // of which waiting for peers
  int64_t payload_bytes_sent = 0;  // by this rank, logits included (ShardGroup::payload_bytes_sent)
  int64_t logits_bytes_sent = 0;   // of which the logits sent to rank 0
};

// Every rank passes the same ids (checked). Top-k layers that select on
// prompt chunks are refused (shard_topk.h); with prefill=dense they read every page here.
// chunk: this rank's prefill chunk (run_shard_prefill; 0: the engine's).
// shard_tokens: the layout (shard_positions), the same on every rank (checked).
Expected<ShardScore> score_sharded(Engine& engine, ShardGroup& group, const std::vector<int32_t>& ids,
                                   int chunk = 0, int64_t shard_tokens = 0);

}  // namespace stride::dist
