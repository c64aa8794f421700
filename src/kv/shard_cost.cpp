#include "kv/shard_cost.h"

#include <algorithm>
#include <map>

namespace stride {

namespace {

// A key read of the attention kernel (f16 or int8 KV, one query row against
// the key, then the value) costs about this many multiply-adds of the
// quantized matmuls: fitted to the contiguous 2- and 4-rank splits of an
// 8192-token SmolLM2-135M prefill (2026-12-06, one thread per rank: 0.63 ms
// of matmuls per token, 35 ns per key read on one layer).
constexpr int64_t kAttentionFlopWeight = 5;

// sum over p in [0, x) of min(p + 1, h) (h == 0: p + 1).
int64_t keys_read_before(int64_t x, int64_t h) {
  if (h <= 0 || x <= h) return x * (x + 1) / 2;
  return h * (h + 1) / 2 + (x - h) * h;
}

}  // namespace

int64_t key_horizon(const PolicySpec& p) {
  switch (p.kind) {
    case PolicyKind::Window: return p.window;
    case PolicyKind::RSWA: return p.sinks + p.window;
    default: return 0;  // dense, top-k read every page in a sharded prefill; strided is bounded by dense
  }
}

ShardCostModel shard_cost_model(const ModelConfig& c, std::span<const PolicySpec> layers) {
  const int64_t q = (int64_t)c.n_head * c.head_dim, k = (int64_t)c.n_head_kv * c.head_dim,
                v = (int64_t)c.n_head_kv * c.head_dim_v, o = (int64_t)c.n_head * c.head_dim_v;
  const int64_t per_layer = (int64_t)c.n_embd * (q + k + v) + o * c.n_embd + 3 * (int64_t)c.n_embd * c.n_ff;
  const int64_t per_key = (int64_t)c.n_head * (c.head_dim + c.head_dim_v) * kAttentionFlopWeight;
  ShardCostModel m;
  m.token_cost = std::max<int64_t>(1, per_layer * c.n_layer / std::max<int64_t>(1, per_key));
  std::map<int64_t, int> by_horizon;
  for (const PolicySpec& p : layers) ++by_horizon[key_horizon(p)];
  m.horizons.assign(by_horizon.begin(), by_horizon.end());
  return m;
}

ShardCostModel steepest_shard_cost() { return ShardCostModel{0, {{0, 1}}}; }

int64_t shard_prefill_cost(const ShardCostModel& cost, int64_t begin, int64_t end) {
  int64_t total = cost.token_cost * (end - begin);
  for (const auto& [h, layers] : cost.horizons) total += layers * (keys_read_before(end, h) - keys_read_before(begin, h));
  return total;
}

}  // namespace stride
