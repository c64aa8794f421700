// Strided sparsity with global ranges (`ranges=A-B+C-D`): keys in a range are
// seen by every later query. The grammar and its errors, the predicate and
// the plan's visibility helpers by brute force, KvManager against the masked
// reference with visibility written from the definition, and release.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "attention/plan.h"
#include "attention/policy.h"
#include "../kv/cache_test_util.h"
#include "core/thread_pool.h"

namespace stride {

using namespace testing_util;

TEST(StridedRanges, ParsesSortsMergesAndPrints) {
  auto p = parse_policy("strided:window=64,stride=8,ranges=500-563+100-131");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->global_ranges.size(), 2u);
  EXPECT_EQ(p->global_ranges[0], (TokenRange{100, 131}));
  EXPECT_EQ(p->global_ranges[1], (TokenRange{500, 563}));
  EXPECT_EQ(policy_to_string(*p), "strided:window=64,stride=8,block=32,ranges=100-131+500-563");
  auto rt = parse_policy(policy_to_string(*p));
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  EXPECT_EQ(*rt, *p);

  // Overlapping and adjacent ranges merge; a single token is a range.
  auto m = parse_policy("strided:window=4,stride=2,ranges=10-20+15-30+31-40+7-7");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->global_ranges, (std::vector<TokenRange>{{7, 7}, {10, 40}}));
  // Without ranges and globals the string has neither (and parses back).
  auto plain = parse_policy("strided:window=33,stride=2,block=24");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(policy_to_string(*plain), "strided:window=33,stride=2,block=24");
  EXPECT_EQ(*parse_policy(policy_to_string(*plain)), *plain);
}

TEST(StridedRanges, BadRangesAreClearErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"strided:window=4,stride=2,ranges=", "expected A-B"},
      {"strided:window=4,stride=2,ranges=5", "expected A-B, got '5'"},
      {"strided:window=4,stride=2,ranges=9-3", "'9-3' ends before it starts"},
      {"strided:window=4,stride=2,ranges=a-b", "'a-b' is not A-B"},
      {"strided:window=4,stride=2,ranges=-1-3", "is not A-B"},
      {"strided:window=4,stride=2,ranges=1-2+", "expected A-B, got ''"},
      {"strided:window=4,stride=2,ranges=1-2;4-5", "is not A-B"},
      {"strided:window=4,stride=2,range=1-2", "allowed: window, globals, stride, block, ranges"},
  };
  for (const auto& [text, msg] : cases) {
    auto p = parse_policy(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find(msg), std::string::npos)
        << text << " -> " << p.status().message();
  }
}

TEST(StridedRanges, PredicateMatchesTheDefinition) {
  const PolicySpec p = *parse_policy("strided:window=3,globals=2,stride=4,block=8,ranges=45-50+60-60");
  // q = 100: globals 0,1; window 98..100; blocks 0, 4, 8, 12; ranges 45..50 and 60.
  for (int64_t k = 0; k <= 110; ++k) {
    const bool want =
        k <= 100 && (k < 2 || k >= 98 || (k / 8) % 4 == 0 || (k >= 45 && k <= 50) || k == 60);
    EXPECT_EQ(policy_attends(p, 100, k), want) << k;
  }
  EXPECT_FALSE(policy_attends(p, 44, 45));     // causal still applies
  EXPECT_TRUE(policy_keeps(p, 47, 1 << 30));   // range keys stay for good
  EXPECT_FALSE(policy_keeps(p, 52, 100));
}

TEST(StridedRanges, VisibilityHelpersAreExactConsequencesOfThePredicate) {
  std::mt19937 rng(11);
  for (const char* text : {"strided:window=5,globals=3,stride=3,block=4,ranges=20-22+50-80",
                           "strided:window=2,stride=7,block=5,ranges=13-13+40-41+90-95"}) {
    const PolicySpec p = *parse_policy(text);
    for (int trial = 0; trial < 4000; ++trial) {
      const int64_t qa = rng() % 120, qb = qa + rng() % 20;
      const int64_t ka = rng() % 140, kb = ka + rng() % 16;
      bool any = false, all = true;
      for (int64_t q = qa; q <= qb; ++q)
        for (int64_t k = ka; k <= kb; ++k) {
          any = any || policy_attends(p, q, k);
          all = all && policy_attends(p, q, k);
        }
      ASSERT_EQ(policy_any_visible(p, qa, qb, ka, kb), any) << text << " q " << qa << ".." << qb << " k " << ka << ".." << kb;
      ASSERT_EQ(policy_all_visible(p, qa, qb, ka, kb), all) << text << " q " << qa << ".." << qb << " k " << ka << ".." << kb;
    }
  }
}

TEST(StridedRanges, PrefillAndDecodeMatchMaskedReference) {
  Shape s;  // page 16
  const int n = 300;
  const AttentionParams p = params_for(s);
  const auto q = random_vec((size_t)n * s.n_head * s.hd, 51);
  const auto k = random_vec((size_t)n * s.n_kv * s.hd, 52);
  const auto v = random_vec((size_t)n * s.n_kv * s.hd, 53);
  // Window 20, globals 3, every 5th block of 16, ranges straddling pages.
  const PolicySpec pol = *parse_policy("strided:window=20,globals=3,stride=5,block=16,ranges=40-57+100-100+150-190");
  auto visible = [](int i, int, int64_t j) {
    const int64_t q = i;  // queries sit at positions 0 .. n - 1
    return j <= q && (j < 3 || j > q - 20 || (j / 16) % 5 == 0 || (j >= 40 && j <= 57) ||
                      j == 100 || (j >= 150 && j <= 190));
  };
  std::vector<float> want((size_t)n * s.n_head * s.hd);
  attention_reference_masked(p, s.n_kv, s.hd, s.hd, q.data(), n, f16_round(k).data(),
                             f16_round(v).data(), n, visible, want.data());
  ThreadPool threads(2);
  for (const auto& chunks : {std::vector<int>{n}, split_into(n, {37, 50, 13}), split_into(n, {1}),
                             split_into(n, {250, 1})}) {
    auto cache = make_cache(s, {pol});
    const auto got = run_chunks(*cache, s, p, q, k, v, chunks, threads);
    EXPECT_LT(max_abs_diff(got, want), 2e-5f) << "first chunk " << chunks[0];
    EXPECT_EQ(cache->stats().pages_used, 0) << "pages leaked";
  }
}

TEST(StridedRanges, PagesHoldingARangeAreKeptForever) {
  Shape s;  // page 16
  const PolicySpec pol = *parse_policy("strided:window=40,globals=4,stride=4,block=16,ranges=100-131+345-345");
  auto cache = make_cache(s, {pol});
  auto seq = cache->add_sequence();
  ASSERT_TRUE(seq.ok());
  const int n = 640;  // 40 pages
  const auto k = random_vec((size_t)n * s.n_kv * s.hd, 1);
  StepDriver steps(*cache);
  ASSERT_TRUE(steps.reserve(*seq, n).ok());
  steps.write(0, *seq, k.data(), k.data(), n);
  steps.commit(*seq, n);
  // Strided pages 0, 4, ..., 36 (10), the window's pages 37..39 (3), and the
  // range pages 6, 7 (100-131; page 8 is strided anyway) and 21 (345).
  EXPECT_EQ(cache->sequences().pages_held(*seq, 0), 10 + 3 + 3);
  cache->remove_sequence(*seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

}  // namespace stride
