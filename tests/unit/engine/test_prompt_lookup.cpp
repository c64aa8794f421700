// Prompt lookup drafts against hand-worked contexts, and the drafter's adaptive length.
#include <gtest/gtest.h>

#include <vector>

#include "engine/prompt_lookup.h"
#include "engine/speculative.h"

namespace stride {
namespace {

std::vector<int32_t> draft(const std::vector<int32_t>& ctx, int ngram_min, int ngram_max, int draft_max) {
  return prompt_lookup_draft(ctx, PromptLookupOptions{ngram_min, ngram_max, draft_max});
}

TEST(PromptLookup, CopiesWhatFollowedTheLatestOccurrence) {
  // ... 5 6 7 8 9 ... 5 6 1 2 ... 5 6  -> the latest "5 6" was followed by 1 2.
  const std::vector<int32_t> ctx = {5, 6, 7, 8, 9, 4, 5, 6, 1, 2, 3, 5, 6};
  EXPECT_EQ(draft(ctx, 1, 3, 4), (std::vector<int32_t>{1, 2, 3, 5}));
  EXPECT_EQ(draft(ctx, 1, 3, 2), (std::vector<int32_t>{1, 2}));
}

TEST(PromptLookup, PrefersTheLongestMatchingSuffix) {
  // "6" alone last occurred before 9; "5 6" occurred before 7.
  const std::vector<int32_t> ctx = {5, 6, 7, 7, 1, 6, 9, 2, 5, 6};
  EXPECT_EQ(draft(ctx, 1, 2, 2), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(draft(ctx, 1, 1, 2), (std::vector<int32_t>{9, 2}));
}

TEST(PromptLookup, StopsAtTheEndOfTheContext) {
  // The match "1 2" at 0 is followed by 1 2 (the suffix itself): overlap is allowed.
  const std::vector<int32_t> ctx = {1, 2, 1, 2};
  EXPECT_EQ(draft(ctx, 2, 2, 8), (std::vector<int32_t>{1, 2}));
}

TEST(PromptLookup, NothingWithoutAMatch) {
  EXPECT_TRUE(draft({1, 2, 3, 4}, 1, 3, 8).empty());
  EXPECT_TRUE(draft({7}, 1, 3, 8).empty());
  EXPECT_TRUE(draft({}, 1, 3, 8).empty());
  EXPECT_TRUE(draft({3, 4, 3, 4}, 3, 3, 8).empty());  // "4 3 4" never occurred before
  EXPECT_TRUE(draft({1, 2, 1, 2}, 1, 2, 0).empty());
}

}  // namespace
}  // namespace stride

namespace stride {
namespace {

// The draft length follows what the target accepted: after a rejection one
// more than were accepted, after a fully accepted step two more, within
// [draft_min, draft_max].
TEST(Drafter, AdaptsTheDraftLengthToAcceptance) {
  std::vector<int32_t> ctx;
  for (int i = 0; i < 40; ++i) ctx.push_back(100 + i);
  ctx.push_back(100);  // "100" occurred before: 39 tokens follow it
  SpeculativeOptions o;
  o.mode = SpeculativeMode::PromptLookup;
  o.draft_max = 8;
  o.draft_min = 2;
  Drafter d(o, nullptr, SamplingParams{});
  std::vector<int32_t> drafts;
  std::vector<TokenDistribution> q;
  d.propose(ctx, 64, drafts, q);
  EXPECT_EQ(drafts.size(), 8u);
  EXPECT_TRUE(q.empty());
  d.record(8, 2);
  d.propose(ctx, 64, drafts, q);
  EXPECT_EQ(drafts.size(), 3u);
  d.record(3, 3);
  d.propose(ctx, 64, drafts, q);
  EXPECT_EQ(drafts.size(), 5u);
  d.record(5, 0);  // never below draft_min
  EXPECT_EQ(d.draft_length(), 2);
  d.propose(ctx, 1, drafts, q);  // a limit under draft_min: nothing
  EXPECT_TRUE(drafts.empty());
  for (int i = 0; i < 10; ++i) d.record(d.draft_length(), d.draft_length());
  EXPECT_EQ(d.draft_length(), 8);  // never above draft_max
}

}  // namespace
}  // namespace stride
