// Strided sparsity (local window + global tokens + every s-th block): the
// predicate from its definition, the plan's visibility helpers by brute
// force, KvManager against the naive reference, decode == prefill, and release.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "attention/plan.h"
#include "attention/policy.h"
#include "../kv/cache_test_util.h"
#include "core/thread_pool.h"

namespace stride {

using namespace testing_util;

namespace {

std::vector<float> run_policy(const std::string& policy, int n, const std::vector<int>& chunks,
                              int threads_n, std::vector<float>* want) {
  const auto pol = parse_policy(policy);
  EXPECT_TRUE(pol.ok()) << policy;
  Shape s;
  const AttentionParams p = params_for(s);
  const auto q = random_vec((size_t)n * s.n_head * s.hd, 41);
  const auto k = random_vec((size_t)n * s.n_kv * s.hd, 42);
  const auto v = random_vec((size_t)n * s.n_kv * s.hd, 43);
  auto cache = make_cache(s, {*pol});
  ThreadPool threads(threads_n);
  auto got = run_chunks(*cache, s, p, q, k, v, chunks, threads);
  EXPECT_EQ(cache->stats().pages_used, 0) << "pages leaked";
  if (want) {
    want->resize(got.size());
    attention_reference(*pol, p, s.n_kv, s.hd, s.hd, q.data(), n, 0, f16_round(k).data(),
                        f16_round(v).data(), n, want->data());
  }
  return got;
}

}  // namespace

TEST(StridedPolicy, ParsesAndPrints) {
  auto p = parse_policy("strided:window=64,globals=4,stride=8");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->kind, PolicyKind::Strided);
  EXPECT_EQ(p->window, 64);
  EXPECT_EQ(p->sinks, 4);
  EXPECT_EQ(p->stride, 8);
  EXPECT_EQ(p->block, 32);
  auto rt = parse_policy(policy_to_string(*p));
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(*rt, *p);
  for (const char* bad : {"strided", "strided:window=4", "strided:stride=4", "strided:window=4,stride=0",
                          "strided:window=4,stride=2,gap=1"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

TEST(StridedPolicy, PredicateMatchesTheDefinition) {
  const PolicySpec p = *parse_policy("strided:window=3,globals=2,stride=4,block=8");
  // q = 100: globals 0,1; window 98..100; blocks 0, 4, 8, 12 (keys 0-7, 32-39, 64-71, 96-103).
  for (int64_t k = 0; k <= 110; ++k) {
    const bool want = k <= 100 && (k < 2 || k >= 98 || (k / 8) % 4 == 0);
    EXPECT_EQ(policy_attends(p, 100, k), want) << k;
  }
  EXPECT_TRUE(policy_keeps(p, 35, 1 << 20));   // a strided block stays for good
  EXPECT_FALSE(policy_keeps(p, 45, 100));      // neither global, strided nor in the window
}

TEST(StridedPolicy, VisibilityHelpersAreExactConsequencesOfThePredicate) {
  std::mt19937 rng(7);
  for (const char* text : {"strided:window=5,globals=3,stride=3,block=4",
                           "strided:window=17,stride=2,block=16", "strided:window=1,stride=5,block=3"}) {
    const PolicySpec p = *parse_policy(text);
    for (int trial = 0; trial < 3000; ++trial) {
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

TEST(StridedPolicy, PrefillAndDecodeMatchReference) {
  // Blocks equal to the page (16), smaller than it, and straddling pages.
  for (const char* pol : {"strided:window=40,globals=4,stride=3,block=16",
                          "strided:window=24,globals=5,stride=4,block=8",
                          "strided:window=33,stride=2,block=24"}) {
    SCOPED_TRACE(pol);
    std::vector<float> want;
    const auto one = run_policy(pol, 260, {260}, 2, &want);
    EXPECT_LT(max_abs_diff(one, want), 2e-5f);
    const auto chunked = run_policy(pol, 260, split_into(260, {37, 50, 13}), 2, nullptr);
    EXPECT_LT(max_abs_diff(chunked, want), 2e-5f);
    const auto decode = run_policy(pol, 260, split_into(260, {1}), 1, nullptr);
    EXPECT_LT(max_abs_diff(decode, want), 2e-5f);
  }
}

TEST(StridedPolicy, ReleasesPagesOutsideWindowGlobalsAndStride) {
  Shape s;  // page 16
  const PolicySpec pol = *parse_policy("strided:window=40,globals=4,stride=4,block=16");
  auto cache = make_cache(s, {pol});
  auto seq = cache->add_sequence();
  ASSERT_TRUE(seq.ok());
  ThreadPool threads(1);
  const int n = 640;  // 40 pages
  const auto k = random_vec((size_t)n * s.n_kv * s.hd, 1);
  StepDriver steps(*cache);
  ASSERT_TRUE(steps.reserve(*seq, n).ok());
  steps.write(0, *seq, k.data(), k.data(), n);
  steps.commit(*seq, n);
  // Kept: every 4th page (0, 4, ..., 36: 10 pages, page 0 also holds the
  // globals) plus the pages the next query's window (600, 640] touches (37..39).
  EXPECT_EQ(cache->sequences().pages_held(*seq, 0), 10 + 3);
  cache->remove_sequence(*seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

}  // namespace stride
