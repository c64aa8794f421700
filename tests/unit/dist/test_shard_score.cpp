// How `stride score --shard-world` cuts a prompt (shard_positions): runs of
// whole pages, contiguous and in rank order, covering every position once,
// by the fixed runs of --shard-tokens or balanced (kv/shard_layout.h, whose
// cut is checked against brute force in tests/unit/kv/test_shard_cost.cpp);
// a prompt that leaves a rank no position is refused.
#include <gtest/gtest.h>

#include "dist/kv_shard.h"
#include "dist/shard_score.h"

namespace stride::dist {
namespace {

const ShardCostModel kTokensOnly{1, {}};               // equal tokens cost equally
const ShardCostModel kDense{18432, {{0, 30}}};          // SmolLM2-135M's proportions, dense

TEST(ShardPositions, CoverThePromptInContiguousRunsOfPages) {
  for (const ShardCostModel& cost : {kTokensOnly, kDense, steepest_shard_cost()})
    for (const int64_t n : {64, 100, 512, 700, 1024, 1025, 4097}) {
      for (const int world : {1, 2, 3, 4}) {
        int64_t next = 0;
        for (int rank = 0; rank < world; ++rank) {
          const auto shard = shard_positions(n, world, rank, 32, 0, cost);
          if (!shard.ok()) {
            // Refused only when the prompt has fewer pages than ranks.
            EXPECT_LT((n + 31) / 32, world) << n << " " << world << " " << rank;
            next = n;
            break;
          }
          EXPECT_EQ(shard->pos_begin, next) << n << " tokens, rank " << rank << "/" << world;
          EXPECT_EQ(shard->pos_begin % 32, 0);  // so every run but the last is whole pages
          EXPECT_GT(shard->tokens(), 0);
          next = shard->pos_end;
        }
        EXPECT_EQ(next, n) << n << " tokens over " << world << " ranks";
      }
    }
}

TEST(ShardPositions, SplitOnSegmentsOrPages) {
  EXPECT_EQ(shard_positions(1024, 4, 2, 32, 0, kTokensOnly)->pos_begin, 512);
  EXPECT_EQ(shard_positions(1024, 4, 2, 32, 0, kDense)->pos_end, 768);  // one segment each: the only cut
  EXPECT_EQ(shard_positions(700, 2, 1, 32, 0, kTokensOnly)->pos_begin, 256);  // 3 segments: 256 + 444 beats 512 + 188
  EXPECT_EQ(shard_positions(700, 3, 1, 32, 0, kTokensOnly)->pos_begin, 256);
  EXPECT_EQ(shard_positions(700, 4, 1, 32, 0, kTokensOnly)->pos_begin, 192);  // under a segment a rank: 6 pages each
}

TEST(ShardPositions, AFixedRunKeepsEveryBoundaryAsThePromptGrows) {
  // --shard-tokens 256 over 4 ranks: ranks 0-2 hold [256 r, 256 (r + 1)) for any prompt past 768 tokens.
  for (const int64_t n : {769, 896, 1024, 5000}) {
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_EQ(shard_positions(n, 4, rank, 32, 256, kDense)->pos_begin, 256 * rank) << n;
      EXPECT_EQ(shard_positions(n, 4, rank, 32, 256, kDense)->pos_end, 256 * (rank + 1)) << n;
    }
    EXPECT_EQ(shard_positions(n, 4, 3, 32, 256, kDense)->pos_begin, 768);
    EXPECT_EQ(shard_positions(n, 4, 3, 32, 256, kDense)->pos_end, n);
  }
  EXPECT_EQ(shard_positions(1024, 2, 1, 32, 250, kDense)->pos_begin, 256);  // rounded up to 8 pages
  // A prompt of (world - 1) runs or fewer is cut balanced.
  EXPECT_EQ(shard_positions(768, 4, 1, 32, 256, kTokensOnly)->pos_begin, 192);
  EXPECT_EQ(shard_positions(100, 2, 1, 32, 256, kTokensOnly)->pos_begin, 64);
}

TEST(ShardPositions, RefuseARankWithoutPositions) {
  EXPECT_EQ(shard_positions(40, 4, 2, 32, 0, kDense).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(shard_positions(100, 2, 2, 32, 0, kDense).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(shard_positions(0, 1, 0, 32, 0, kDense).status().code(), StatusCode::kInvalidArgument);
}

// The root of a decode folds its keys one kernel segment at a time
// (sharded_decode.h): pieces cut at absolute multiples of 8 pages, naming the
// shard's own pool pages.
TEST(SplitAtSegments, CutsAtTheKernelsFixedKeyPositions) {
  KvShard shard{256 + 64, 256 * 3 + 5, {}};
  for (int32_t i = 0; i < shard.pages(32); ++i) shard.page_ids.push_back(100 + i);
  const auto pieces = split_at_segments(shard, 32);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].pos_begin, 320);
  EXPECT_EQ(pieces[0].pos_end, 512);
  EXPECT_EQ(pieces[1].pos_begin, 512);
  EXPECT_EQ(pieces[1].pos_end, 768);
  EXPECT_EQ(pieces[2].pos_begin, 768);
  EXPECT_EQ(pieces[2].pos_end, 773);
  EXPECT_EQ(pieces[0].page_ids, (std::vector<int32_t>{100, 101, 102, 103, 104, 105}));
  EXPECT_EQ(pieces[1].page_ids.front(), 106);
  EXPECT_EQ(pieces[1].page_ids.size(), 8u);
  EXPECT_EQ(pieces[2].page_ids, (std::vector<int32_t>{114}));
  EXPECT_EQ(split_at_segments(KvShard{0, 256, {}}, 32).size(), 1u);
}

// A decode root folds only the segments its plan reads: those of
// split_at_segments whose keys the query sees, found by the predicate key by
// key, with the shard's first kept on request (it carries a sink's state).
TEST(SegmentsRead, AreTheSegmentsHoldingAKeyTheQuerySees) {
  for (const char* text : {"rswa:sinks=4,window=300", "window:size=40", "dense"}) {
    const PolicySpec policy = *parse_policy(text);
    for (const int64_t begin : {0, 32 * 3}) {
      KvShard shard{begin, 256 * 9 + 17, {}};
      for (int32_t i = 0; i < shard.pages(32); ++i) shard.page_ids.push_back(1000 - i);
      const int64_t q = shard.pos_end - 1;
      const AttentionPlan plan = plan_shard_attention(policy, shard, 32, 2, q, 1, 1);
      for (const bool keep_first : {false, true}) {
        std::vector<KvShard> want;
        for (const KvShard& piece : split_at_segments(shard, 32)) {
          bool seen = keep_first && piece.pos_begin == shard.pos_begin;
          for (int64_t k = piece.pos_begin; k < piece.pos_end && !seen; ++k) seen = policy_attends(policy, q, k);
          if (seen) want.push_back(piece);
        }
        const auto got = segments_read(plan, shard, 32, keep_first);
        ASSERT_EQ(got.size(), want.size()) << text << " from " << begin;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].pos_begin, want[i].pos_begin);
          EXPECT_EQ(got[i].pos_end, want[i].pos_end);
          EXPECT_EQ(got[i].page_ids, want[i].page_ids);
        }
      }
    }
  }
}

}  // namespace
}  // namespace stride::dist
