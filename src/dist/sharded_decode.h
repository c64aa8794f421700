#pragma once
// Decode across a shard group: the queries of the root rank (one or a few
// new tokens) go to every rank, each rank attends to its own pages, and the
// partial softmax states come back to the root, which merges them in rank
// order (partial_merge.h). In generation the root is the last rank, whose
// shard holds the new tokens' keys (shard_generate.h).
//
// Payload per layer and call, for n_q queries, H query heads, head widths
// dk and dv, W ranks: the root sends n_q*H*dk*4 bytes to each of W-1 ranks;
// each other rank sends n_q*H*(dv+2)*4 bytes back.
#include <cstdint>

#include "core/status.h"
#include "core/thread_pool.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"

namespace stride::dist {

// q: [n_q, n_head, dk] at positions q_pos0 + i: the root's queries,
//    overwritten with them on every other rank (sized alike everywhere).
// out: [n_q, n_head, dv], written on the root only.
// Every rank passes the same n_q, q_pos0 and root.
Status sharded_decode(ShardGroup& group, const ShardedLayer& layer, float* q, int n_q, int64_t q_pos0,
                      float* out, ThreadPool& threads, int root = 0);

}  // namespace stride::dist
