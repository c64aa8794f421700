// The balanced shard cut against brute force: the prefill cost of a run of
// positions, and a decode step's cost to it, against counting, query by
// query and layer by layer, the keys the layer's policy lets it read
// (policy_attends); and the cut against trying every segment-aligned set of
// boundaries for small prompts.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>

#include "attention/work_partition.h"
#include "kv/shard_cost.h"
#include "kv/shard_layout.h"

namespace stride {
namespace {

constexpr int kPage = 4;  // small pages keep the brute force small: 32-token segments
constexpr int64_t kSegment = kSegmentPages * kPage;

PolicySpec policy(PolicyKind kind, int64_t window = 0, int64_t sinks = 0) {
  PolicySpec p;
  p.kind = kind;
  p.window = window;
  p.sinks = sinks;
  return p;
}

// The cost by its definition: token_cost per token, one per key each layer's query reads.
int64_t counted_cost(int64_t token_cost, const std::vector<PolicySpec>& layers, int64_t begin, int64_t end) {
  int64_t total = token_cost * (end - begin);
  for (const PolicySpec& p : layers)
    for (int64_t q = begin; q < end; ++q)
      for (int64_t k = 0; k <= q; ++k) total += policy_attends(p, q, k) ? 1 : 0;
  return total;
}

// Layer policies of a few models: dense, a window, R-SWA beside dense, the narrowest window.
std::vector<std::vector<PolicySpec>> layer_models() {
  return {{policy(PolicyKind::Dense)},
          {policy(PolicyKind::Window, 37)},
          {policy(PolicyKind::RSWA, 20, 4), policy(PolicyKind::Dense), policy(PolicyKind::RSWA, 20, 4)},
          {policy(PolicyKind::Window, 1), policy(PolicyKind::RSWA, 64, 1)}};
}

ShardCostModel model_of(int64_t token_cost, const std::vector<PolicySpec>& layers) {
  ModelConfig c;  // only the horizons are used: the token cost is set below
  ShardCostModel m = shard_cost_model(c, layers);
  m.token_cost = token_cost;
  return m;
}

int64_t costliest(const ShardCostModel& cost, const std::vector<int64_t>& b) {
  int64_t worst = 0;
  for (size_t r = 0; r + 1 < b.size(); ++r) worst = std::max(worst, shard_prefill_cost(cost, b[r], b[r + 1]));
  return worst;
}

// Every cut with its inner boundaries on multiples of unit, each rank non-empty and holding at most
// `most` tokens (0: any): the least costliest rank, LLONG_MAX when there is no such cut.
int64_t best_by_brute_force(const ShardCostModel& cost, int64_t n, int world, int64_t unit, int64_t most = 0) {
  int64_t best = LLONG_MAX;
  std::vector<int64_t> b{0};
  std::function<void(int64_t)> place = [&](int64_t from) {
    if ((int)b.size() == world) {
      b.push_back(n);
      if (most == 0 || n - from <= most) best = std::min(best, costliest(cost, b));
      b.pop_back();
      return;
    }
    for (int64_t at = from + unit; at < n && (most == 0 || at - from <= most); at += unit) {
      b.push_back(at);
      place(at);
      b.pop_back();
    }
  };
  place(0);
  return best;
}

TEST(ShardCost, ARunCostsTheKeysItsQueriesRead) {
  for (const auto& layers : layer_models())
    for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 90}, {13, 14}, {17, 200}, {64, 300}})
      EXPECT_EQ(shard_prefill_cost(model_of(7, layers), begin, end), counted_cost(7, layers, begin, end))
          << policy_to_string(layers[0]) << " [" << begin << ", " << end << ")";
}

TEST(ShardCost, TheCutCostsWhatTheBestSegmentAlignedCutCosts) {
  const std::vector<std::pair<int64_t, std::vector<PolicySpec>>> models{
      {0, {policy(PolicyKind::Dense)}},
      {40, {policy(PolicyKind::Dense), policy(PolicyKind::Dense)}},
      {200, {policy(PolicyKind::Window, 48)}},
      {10, {policy(PolicyKind::RSWA, 40, 4), policy(PolicyKind::Dense)}},
      {1, {}}};
  for (const auto& [token_cost, layers] : models) {
    const ShardCostModel cost = model_of(token_cost, layers);
    for (const int world : {2, 3, 4})
      for (int64_t n = world * kSegment - 5; n <= 11 * kSegment; n += 29) {
        const std::vector<int64_t> b = balanced_boundaries(n, world, kPage, cost);
        ASSERT_EQ((int)b.size(), world + 1);
        EXPECT_EQ(b.front(), 0);
        EXPECT_EQ(b.back(), n);
        const int64_t unit = (n + kSegment - 1) / kSegment >= world ? kSegment : kPage;
        for (int r = 1; r < world; ++r) {
          EXPECT_LT(b[r - 1], b[r]);
          EXPECT_EQ(b[r] % unit, 0) << n;
        }
        EXPECT_LT(b[world - 1], n);
        EXPECT_EQ(costliest(cost, b), best_by_brute_force(cost, n, world, unit))
            << "n " << n << " world " << world << " token cost " << token_cost;
      }
  }
}

TEST(ShardCost, ADecodeStepCostsTheKeysOfTheRunItsQueryReads) {
  for (const auto& layers : layer_models()) {
    DecodeCostModel cost = decode_cost_model(ModelConfig{}, layers);
    cost.token_cost = 777;
    for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 90}, {13, 14}, {17, 200}, {64, 300}})
      for (const int64_t n : {end, end + 1, end + 19, end + 70, int64_t{400}}) {
        int64_t counted = 0;
        for (const PolicySpec& p : layers)
          for (int64_t k = begin; k < end; ++k) counted += policy_attends(p, n, k) ? 1 : 0;
        EXPECT_EQ(shard_decode_cost(cost, begin, end, n, false), counted) << begin << " " << end << " " << n;
        EXPECT_EQ(shard_decode_cost(cost, begin, end, n, true), counted + 777);
      }
  }
}

TEST(ShardCost, NoRankTakesMoreThanTheFixedRun) {
  // The balanced cut under --shard-tokens S keeps every rank within S: segments where a segment cut
  // does, else pages.
  const ShardCostModel cost = model_of(3, {policy(PolicyKind::Dense)});
  for (const int world : {2, 3, 4})
    for (int64_t n = world * kPage; n <= 9 * kSegment; n += 23)
      for (const int64_t most : {(n + world - 1) / world, n / (world - 1) - 5, n / world + kSegment}) {
        const int64_t run = (most + kPage - 1) / kPage * kPage;  // whole pages, as the layout rounds S
        if ((world - 1) * run >= n + run || run * world < n) continue;
        const std::vector<int64_t> b = balanced_boundaries(n, world, kPage, cost, run);
        for (int r = 0; r < world; ++r) EXPECT_LE(b[r + 1] - b[r], run) << n << " " << world << " " << run;
        const int64_t by_segments = best_by_brute_force(cost, n, world, kSegment, run);
        const int64_t want = by_segments != LLONG_MAX ? by_segments : best_by_brute_force(cost, n, world, kPage, run);
        EXPECT_EQ(costliest(cost, b), want) << n << " " << world << " " << run;
      }
}

TEST(ShardCost, DenseAttentionGivesTheFirstRanksMoreTokensAndWindowsAboutEqualOnes) {
  // 64 segments of 256 over 4 ranks, SmolLM2-135M's proportions (token cost 18432, 30 layers).
  const int64_t n = 16384;
  const std::vector<int64_t> dense = balanced_boundaries(n, 4, 32, ShardCostModel{18432, {{0, 30}}});
  for (int r = 1; r < 4; ++r) EXPECT_GT(dense[r] - dense[r - 1], dense[r + 1] - dense[r]) << r;
  const std::vector<int64_t> rswa = balanced_boundaries(n, 4, 32, ShardCostModel{18432, {{1028, 30}}});
  for (int r = 0; r < 4; ++r) EXPECT_NEAR((double)(rswa[r + 1] - rswa[r]), n / 4.0, 512.0) << r;
}

TEST(ShardCost, APromptOfFewerPagesThanRanksLeavesTheLastRanksNothing) {
  const std::vector<int64_t> b = balanced_boundaries(6, 4, kPage, steepest_shard_cost());
  EXPECT_EQ(b, (std::vector<int64_t>{0, 4, 6, 6, 6}));
}

TEST(ShardCost, TheModelWeighsMatmulsAgainstKeyReads) {
  ModelConfig c;  // SmolLM2-135M
  c.n_embd = 576, c.n_layer = 30, c.n_head = 9, c.n_head_kv = 3, c.head_dim = 64, c.head_dim_v = 64, c.n_ff = 1536;
  const std::vector<PolicySpec> layers(30, policy(PolicyKind::Dense));
  const ShardCostModel m = shard_cost_model(c, layers);
  // Per layer 576 x (576 + 192 + 192) + 576 x 576 + 3 x 576 x 1536 multiply-adds, over 9 x 128 x 5 per key read.
  EXPECT_EQ(m.token_cost, (int64_t)3538944 * 30 / 5760);
  EXPECT_EQ(m.horizons, (std::vector<std::pair<int64_t, int>>{{0, 30}}));
  // In decode a key read weighs 3 multiply-adds: 9 x 128 x 3 per key read.
  EXPECT_EQ(decode_cost_model(c, layers).token_cost, (int64_t)3538944 * 30 / 3456);
}

}  // namespace
}  // namespace stride
