#include "cli/plan_hosts.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kv/shard_layout.h"
#include "kv/store/kv_pool.h"

namespace stride::cli {

namespace {

CutProjection project_cut(const ShardCostModel& cost, const DecodeCostModel& decode_cost, std::vector<int64_t> cut) {
  const int64_t n = cut.back();
  int64_t prefill = 0, decode = 0;
  for (size_t r = 0; r + 1 < cut.size(); ++r) {
    prefill = std::max(prefill, shard_prefill_cost(cost, cut[r], cut[r + 1]));
    decode = std::max(decode, shard_decode_cost(decode_cost, cut[r], cut[r + 1], n, r + 2 == cut.size()));
  }
  CutProjection p;
  p.prefill_speedup = (double)shard_prefill_cost(cost, 0, n) / (double)std::max<int64_t>(1, prefill);
  p.decode_speedup = (double)shard_decode_cost(decode_cost, 0, n, n, true) / (double)std::max<int64_t>(1, decode);
  p.boundaries = std::move(cut);
  return p;
}

}  // namespace

HostPlan plan_hosts(const MemoryPlanInput& in, int hosts) {
  const ModelConfig& c = in.config;
  const int ps = in.page_size;
  HostPlan h;
  h.hosts = hosts;
  h.shard_tokens = automatic_shard_tokens(in.context, hosts, ps);
  const ShardCostModel cost = shard_cost_model(c, in.layer_policies);
  const std::vector<int64_t> cut = shard_boundaries(in.context, hosts, ps, h.shard_tokens, cost);
  for (size_t r = 0; r + 1 < cut.size(); ++r) h.tokens_per_rank = std::max(h.tokens_per_rank, cut[r + 1] - cut[r]);
  h.balanced_tokens = h.shard_tokens > 0 ? (int64_t)(hosts - 1) * h.shard_tokens : in.context;
  h.balanced_boundaries = shard_boundaries(h.balanced_tokens, hosts, ps, h.shard_tokens, cost);
  const DecodeCostModel decode_cost = decode_cost_model(c, in.layer_policies);
  h.layout_cut = project_cut(cost, decode_cost, cut);
  h.prefill_cut = project_cut(cost, decode_cost, balanced_boundaries(in.context, hosts, ps, cost));
  const int64_t pages = (h.tokens_per_rank + ps - 1) / ps;
  const KvPoolShape shape{c.n_head_kv, c.head_dim, c.head_dim_v, ps, in.kv_storage};
  h.weight_bytes = in.weight_bytes;
  h.kv_bytes = (int64_t)c.n_layer * pages * shape.bytes_per_page();

  // The shard runs layer by layer in chunks (Transformer::forward_layerwise):
  // a chunk's activations, beside the residual stream of the whole shard.
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(h.tokens_per_rank, in.prefill_chunk));
  MemoryPlanInput step = in;
  step.context = h.tokens_per_rank;
  step.batch = 1;
  step.prefill_chunk = (int)chunk;
  step.layer_policies.assign((size_t)c.n_layer, PolicySpec{});
  h.activation_bytes = plan_memory(step).activation_bytes + 4 * h.tokens_per_rank * c.n_embd;

  if (hosts > 1) {
    // Dense, on the last rank: every earlier rank's pages of one layer, the
    // block in flight each way, and a chunk's partial states against each rank.
    const int64_t page_image = shape.bytes_per_page() + (int64_t)ps * 4;  // KvPool::page_image_bytes
    const int64_t partials = (int64_t)hosts * chunk * c.n_head * (c.head_dim_v + 2) * 4;
    h.ring_bytes = (int64_t)(hosts - 1) * pages * page_image + 2 * (16 + pages * page_image) + partials;
  }
  h.total_bytes = h.weight_bytes + h.kv_bytes + h.activation_bytes + h.ring_bytes;
  return h;
}

Expected<HostPlan> fewest_hosts(const MemoryPlanInput& in, int64_t host_memory, int max_hosts) {
  // Per-rank need falls as hosts grow, so the first that fits is the fewest.
  for (int hosts = 1; hosts <= max_hosts; ++hosts) {
    HostPlan h = plan_hosts(in, hosts);
    if (h.total_bytes <= host_memory) return h;
    if (h.tokens_per_rank <= in.page_size) break;  // more hosts cannot shrink a shard below a page
  }
  return ResourceExhausted("no shard set of up to " + std::to_string(max_hosts) + " hosts fits " +
                           std::to_string(host_memory) + " bytes per host at " + std::to_string(in.context) +
                           " tokens");
}

}  // namespace stride::cli
