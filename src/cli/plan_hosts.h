#pragma once
// `stride plan --hosts N` / `--host-memory BYTES`: what each rank of a shard
// set needs when one sequence of `context` tokens is spread by position over
// N hosts (docs/deploy.md), and the fewest hosts whose memory holds it.
//
// A rank holds the weights, the KV of its shard (the largest is rank 0's:
// ceil(context / N) tokens rounded up to pages; every layer, every page: the
// pool is sized for the whole shard, though under a window a layer's pages
// behind it go back once the layer is done), the activations of a prefill
// chunk beside the shard's residual stream (the shard runs layer by layer
// in chunks), and ring prefill's buffers: on the last rank, dense, every
// earlier rank's pages of one layer, a block in flight each way, and the
// partial states of a chunk's queries against each rank's block.
#include <cstdint>

#include "core/status.h"
#include "eval/memory_plan.h"

namespace stride::cli {

struct HostPlan {
  int hosts = 1;
  int64_t tokens_per_rank = 0;  // the largest shard
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t ring_bytes = 0;
  int64_t total_bytes = 0;  // per rank
};

// in: the one-host plan's input (context, page size, KV storage, chunk).
HostPlan plan_hosts(const MemoryPlanInput& in, int hosts);

// The fewest hosts (at most max_hosts) whose ranks each fit host_memory;
// ResourceExhausted when none does (the weights alone, or a shard of one page).
Expected<HostPlan> fewest_hosts(const MemoryPlanInput& in, int64_t host_memory, int max_hosts);

}  // namespace stride::cli
