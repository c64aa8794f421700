#pragma once
// `stride plan --hosts N` / `--host-memory BYTES`: what each rank of a shard
// set needs when one sequence of `context` tokens is spread by position over
// N hosts (docs/deploy.md), and the fewest hosts whose memory holds it.
//
// The shards follow the automatic layout (kv/shard_layout.h): ranks 0 ..
// N-2 hold S = floor(context / N) rounded down to 256-token kernel segments
// each, the last rank the rest, which is the largest shard; shorter prompts
// are cut where every rank's prefill costs about the same.
// A rank holds the weights, the KV of the largest shard (every layer, every page: the
// pool is sized for the whole shard, though under a window a layer's pages
// behind it go back once the layer is done), the activations of a prefill
// chunk beside the shard's residual stream (the shard runs layer by layer
// in chunks), and ring prefill's buffers: on the last rank, dense, every
// earlier rank's pages of one layer, a block in flight each way, and the
// partial states of a chunk's queries against each rank's block.
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "eval/memory_plan.h"

namespace stride::cli {

// A cut of a prompt of the whole context, and what it projects over one host
// by the cost model (kv/shard_cost.h): the one host's cost over the costliest
// rank's, in prefill and in a decode step at the end of the prompt.
struct CutProjection {
  std::vector<int64_t> boundaries;  // hosts + 1 positions
  double prefill_speedup = 1;
  double decode_speedup = 1;
};

struct HostPlan {
  int hosts = 1;
  int64_t shard_tokens = 0;     // S: what ranks 0 .. N-2 hold (0: the balanced cut, by prefill cost)
  int64_t tokens_per_rank = 0;  // the largest shard at the whole context
  // The balanced cut (by prefill cost) of the longest prompt cut balanced:
  // (N - 1) * S tokens, or the whole context when S is 0. hosts + 1 positions.
  int64_t balanced_tokens = 0;
  std::vector<int64_t> balanced_boundaries;
  // A prompt of the whole context cut by the layout (equal runs when S > 0)
  // and by --shard-tokens 0 (balanced by prefill cost): the balanced cut
  // prefills faster, the layout's even key counts decode faster under dense.
  CutProjection layout_cut;
  CutProjection prefill_cut;
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
