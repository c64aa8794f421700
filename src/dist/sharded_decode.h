#pragma once
// Decode across a shard group: the queries of the root rank (one or a few
// new tokens) go to every rank holding a key they can see, each such rank
// attends to its own pages, and the partial softmax states come back to the
// root, which merges them in rank order (partial_merge.h). Under a window or
// R-SWA a rank whose positions all lie behind the window (and outside the
// sinks) is not asked: it neither receives the query nor sends a state.
// Top-k layers agree on the one host's pages first (shard_topk.h). In
// generation the root is the last rank, whose shard holds the new tokens'
// keys (shard_generate.h).
//
// Payload per layer and call, for n_q queries, H query heads, head widths
// dk and dv: the root sends n_q*H*dk*4 bytes to each rank it asks; each
// asked rank sends n_q*H*(dv+2)*4 bytes back (and, under top-k, its share of
// the score allreduce).
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"

namespace stride::dist {

// Point-to-point tags of a decode call: the root's queries to a rank, a rank's partials to the root.
constexpr uint32_t kDecodeQueryTag = 2;
constexpr uint32_t kDecodePartialTag = 3;

// Whether `rank` takes part in a decode call: it holds a key one of the
// queries [q_pos0, q_pos0 + n_q) can see (rank_begins: where each rank's
// positions begin, in rank order, the last running to the queries; empty:
// every rank takes part), or is the root, or carries the sink (rank 0).
bool decode_asks_rank(const PolicySpec& policy, const std::vector<int64_t>& rank_begins, int rank, int root,
                      int64_t q_pos0, int n_q, bool sinks);

// What a rank's decode calls cost it, counted (a hook for tests and the
// bench): under a window or R-SWA each figure per call is the same however
// long the shard is.
struct DecodeWork {
  int64_t calls = 0;       // decode calls this rank took part in (layers x steps)
  int64_t partials = 0;    // partial states it computed (kernel calls)
  int64_t pages_read = 0;  // plan entries: the pages the kernel read (per kv head under top-k)
};

// q: [n_q, n_head, dk] at positions q_pos0 + i: the root's queries,
//    overwritten with them on every other rank asked (sized alike everywhere).
// out: [n_q, n_head, dv], written on the root only.
// Every rank passes the same n_q, q_pos0, root and rank_begins.
// work (when given) grows by what this call cost this rank.
Status sharded_decode(ShardGroup& group, const ShardedLayer& layer, float* q, int n_q, int64_t q_pos0,
                      float* out, ThreadPool& threads, int root = 0, const std::vector<int64_t>& rank_begins = {},
                      DecodeWork* work = nullptr);

}  // namespace stride::dist
