// The automatic shard layout (--shard-tokens auto) against the rule
// docs/deploy.md states: S = floor(context / world) rounded down to whole
// 256-token kernel segments (8 pages of 32), 0 (balanced) when that is no
// segment; ranks 0 .. world-2 hold S tokens of any prompt longer than
// (world - 1) * S, the last rank the rest; shorter ones are cut balanced.
#include <gtest/gtest.h>

#include "kv/shard_layout.h"

namespace stride {
namespace {

TEST(ShardLayout, AutomaticRunIsTheContextsShareInWholeSegments) {
  EXPECT_EQ(automatic_shard_tokens(1 << 20, 4, 32), 1 << 18);  // 262144: already whole segments
  EXPECT_EQ(automatic_shard_tokens(100000, 7, 32), 55 * 256);  // 14285.7 down to 55 segments
  EXPECT_EQ(automatic_shard_tokens(1040, 4, 32), 256);
  EXPECT_EQ(automatic_shard_tokens(520, 2, 32), 256);
  EXPECT_EQ(automatic_shard_tokens(1000, 4, 32), 0);  // 250 tokens a rank: under a segment, balanced
  EXPECT_EQ(automatic_shard_tokens(4096, 2, 16), 2048);  // 16-token pages: 128-token segments
  EXPECT_EQ(automatic_shard_tokens(5000, 2, 16), 2432);
  EXPECT_EQ(automatic_shard_tokens(1 << 20, 1, 32), 0);  // one rank: nothing to cut
}

TEST(ShardLayout, ResolveKeepsWhatTheUserGave) {
  EXPECT_EQ(resolve_shard_tokens(kAutoShardTokens, 1040, 4, 32), 256);
  EXPECT_EQ(resolve_shard_tokens(0, 1040, 4, 32), 0);
  EXPECT_EQ(resolve_shard_tokens(300, 1040, 4, 32), 300);
}

// Equal tokens cost equally here: the balanced cut is the equal one, in whole segments or pages.
const ShardCostModel kTokensOnly{1, {}};

TEST(ShardLayout, EveryPromptPastTheFixedRunsKeepsItsBoundaries) {
  // 4 ranks under a 100000-token context: S = 24832 (97 segments).
  const int64_t s = automatic_shard_tokens(100000, 4, 32);
  ASSERT_EQ(s, 97 * 256);
  for (const int64_t n : {3 * s + 1, 3 * s + 4000, int64_t{100000}}) {
    const std::vector<int64_t> want{0, s, 2 * s, 3 * s, n};
    EXPECT_EQ(shard_boundaries(n, 4, 32, s, kTokensOnly), want) << n;
    EXPECT_EQ(shard_boundaries(n, 4, 32, s, steepest_shard_cost()), want) << n;  // whatever the cost
  }
  // The whole context leaves the last rank at least S: it is never a sliver there.
  EXPECT_GE(100000 - 3 * s, s);
  // At (world - 1) * S or fewer the cut is balanced: 74496 tokens are 291 segments, 73 + 73 + 73 + 72.
  const std::vector<int64_t> even{0, 73 * 256, 146 * 256, 219 * 256, 3 * s};
  EXPECT_EQ(shard_boundaries(3 * s, 4, 32, s, kTokensOnly), even);
  // Fewer segments than ranks: whole pages (1000 tokens are 32 pages, 8 a rank).
  const std::vector<int64_t> pages{0, 256, 512, 768, 1000};
  EXPECT_EQ(shard_boundaries(1000, 4, 32, s, kTokensOnly), pages);
  EXPECT_EQ(shard_boundaries(1000, 4, 32, 0, kTokensOnly), pages);
}

TEST(ShardLayout, APoolSizedForTheLargestShardHoldsEveryModelsCut) {
  const ShardCostModel window{18432, {{1024 + 4, 30}}};
  const ShardCostModel mixed{18432, {{0, 10}, {4096, 20}}};
  for (const int world : {2, 3, 4})
    for (int64_t n = 40; n < 40000; n = n * 3 / 2 + 7)
      for (const ShardCostModel& cost : {kTokensOnly, window, mixed, ShardCostModel{18432, {{0, 30}}}}) {
        const std::vector<int64_t> b = shard_boundaries(n, world, 32, 0, cost);
        for (int r = 0; r < world; ++r) EXPECT_LE(b[r + 1] - b[r], largest_shard_tokens(n, world, 32, 0)) << n;
      }
  EXPECT_EQ(largest_shard_tokens(100000, 4, 32, 97 * 256), 100000 - 3 * 97 * 256);  // the fixed runs: exact
}

}  // namespace
}  // namespace stride
