// The automatic shard layout (--shard-tokens auto) against the rule
// docs/deploy.md states: S = floor(context / world) rounded down to whole
// 256-token kernel segments (8 pages of 32), 0 (balanced) when that is no
// segment; ranks 0 .. world-2 hold S tokens of any prompt longer than
// (world - 1) * S, the last rank the rest.
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

TEST(ShardLayout, EveryPromptPastTheFixedRunsKeepsItsBoundaries) {
  // 4 ranks under a 100000-token context: S = 24832 (97 segments).
  const int64_t s = automatic_shard_tokens(100000, 4, 32);
  ASSERT_EQ(s, 97 * 256);
  for (const int64_t n : {3 * s + 1, 3 * s + 4000, int64_t{100000}}) EXPECT_EQ(shard_stride(n, 4, 32, s), s) << n;
  // The whole context leaves the last rank at least S: it is never a sliver there.
  EXPECT_GE(100000 - 3 * s, s);
  // At (world - 1) * S or fewer the cut is balanced, in whole pages.
  EXPECT_EQ(shard_stride(3 * s, 4, 32, s), 18624);  // ceil(74496 / 4) = 18624, 582 pages
  EXPECT_EQ(shard_stride(1000, 4, 32, s), 256);     // 250 rounded up to 8 pages
  EXPECT_EQ(shard_stride(1000, 4, 32, 0), 256);
}

}  // namespace
}  // namespace stride
