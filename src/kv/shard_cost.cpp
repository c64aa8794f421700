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

// The same in decode: fitted to one-rank decode of Qwen2.5-Coder-0.5B (f16
// KV) at 8K, 16K and 32K keys (2026-12-07, Zen 4, one thread: 11.3 ms of
// matmuls per token, 187 ns per key read on one layer, 3.3 multiply-adds).
constexpr int64_t kDecodeAttentionFlopWeight = 3;

// sum over p in [0, x) of min(p + 1, h) (h == 0: p + 1).
int64_t keys_read_before(int64_t x, int64_t h) {
  if (h <= 0 || x <= h) return x * (x + 1) / 2;
  return h * (h + 1) / 2 + (x - h) * h;
}

// A token's matmuls over every layer, in key reads on one layer weighed `weight` multiply-adds each.
int64_t token_cost_in_key_reads(const ModelConfig& c, int64_t weight) {
  const int64_t q = (int64_t)c.n_head * c.head_dim, k = (int64_t)c.n_head_kv * c.head_dim,
                v = (int64_t)c.n_head_kv * c.head_dim_v, o = (int64_t)c.n_head * c.head_dim_v;
  const int64_t per_layer = (int64_t)c.n_embd * (q + k + v) + o * c.n_embd + 3 * (int64_t)c.n_embd * c.n_ff;
  const int64_t per_key = (int64_t)c.n_head * (c.head_dim + c.head_dim_v) * weight;
  return std::max<int64_t>(1, per_layer * c.n_layer / std::max<int64_t>(1, per_key));
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
  ShardCostModel m;
  m.token_cost = token_cost_in_key_reads(c, kAttentionFlopWeight);
  std::map<int64_t, int> by_horizon;
  for (const PolicySpec& p : layers) ++by_horizon[key_horizon(p)];
  m.horizons.assign(by_horizon.begin(), by_horizon.end());
  return m;
}

DecodeCostModel decode_cost_model(const ModelConfig& c, std::span<const PolicySpec> layers) {
  DecodeCostModel m;
  m.token_cost = token_cost_in_key_reads(c, kDecodeAttentionFlopWeight);
  std::map<std::pair<int64_t, int64_t>, int> by_reads;  // (window, sinks)
  for (const PolicySpec& p : layers) {
    const bool bounded = p.kind == PolicyKind::Window || p.kind == PolicyKind::RSWA;
    ++by_reads[{bounded ? p.window : 0, p.kind == PolicyKind::RSWA ? p.sinks : 0}];
  }
  for (const auto& [reads, n] : by_reads) m.reads.push_back({reads.first, reads.second, n});
  return m;
}

ShardCostModel steepest_shard_cost() { return ShardCostModel{0, {{0, 1}}}; }

int64_t shard_prefill_cost(const ShardCostModel& cost, int64_t begin, int64_t end) {
  int64_t total = cost.token_cost * (end - begin);
  for (const auto& [h, layers] : cost.horizons) total += layers * (keys_read_before(end, h) - keys_read_before(begin, h));
  return total;
}

int64_t shard_decode_cost(const DecodeCostModel& cost, int64_t begin, int64_t end, int64_t n, bool keeps_tokens) {
  const auto held = [&](int64_t lo, int64_t hi) { return std::max<int64_t>(0, std::min(end, hi) - std::max(begin, lo)); };
  int64_t total = keeps_tokens ? cost.token_cost : 0;
  for (const DecodeCostModel::Reads& r : cost.reads) {
    // policy_attends: k < sinks, or k > n - window.
    const int64_t keys = r.window <= 0 ? held(0, n)
                                       : held(0, std::min(r.sinks, n)) + held(std::max(r.sinks, n - r.window + 1), n);
    total += r.layers * keys;
  }
  return total;
}

}  // namespace stride
