// KvManager page lifetime: release by policy, exhaustion, sequence ids.
#include <gtest/gtest.h>

#include <algorithm>

#include "kv/kv_manager.h"
#include "attention/policy.h"
#include "cache_test_util.h"

namespace stride {

using namespace testing_util;

namespace {

// Decodes n tokens one by one (reserve, write, attend, commit on every layer)
// and calls after(length) after each commit.
template <typename F>
void decode(KvManager& kv, KvManager::SeqId seq, const Shape& s, int n, ThreadPool& threads,
            F after) {
  StepDriver cache(kv);
  const auto k = random_vec((size_t)s.n_kv * s.hd, 5);
  const auto q = random_vec((size_t)s.n_head * s.hd, 6);
  std::vector<float> out((size_t)s.n_head * s.hd);
  const AttentionParams p = params_for(s);
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(cache.reserve(seq, 1).ok());
    for (int l = 0; l < kv.config().n_layer; ++l) {
      cache.write(l, seq, k.data(), k.data(), 1);
      cache.attend(l, seq, q.data(), 1, p, out.data(), threads);
    }
    cache.commit(seq, 1);
    after(kv.length(seq));
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

TEST(KVCachePages, RswaAndWindowHoldBoundedPagesDenseGrows) {
  Shape s;
  const auto rswa = *parse_policy("rswa:sinks=4,window=64");
  const auto win = *parse_policy("window:size=64");
  auto cache = make_cache(s, {rswa, win, PolicySpec{}});
  ASSERT_TRUE(cache);
  auto seq = cache->add_sequence();
  ASSERT_TRUE(seq.ok());
  ThreadPool threads(2);
  const int64_t rswa_bound = ceil_div(4, s.page) + ceil_div(64, s.page) + 1;
  const int64_t win_bound = ceil_div(64, s.page) + 1;
  int64_t used_min = INT64_MAX, used_max = 0;
  decode(*cache, *seq, s, 1200, threads, [&](int64_t len) {
    ASSERT_LE(cache->sequences().pages_held(*seq, 0), rswa_bound) << len;
    ASSERT_LE(cache->sequences().pages_held(*seq, 1), win_bound) << len;
    ASSERT_EQ(cache->sequences().pages_held(*seq, 2), ceil_div(len, s.page)) << len;  // dense: linear
    if (len >= 1000) {
      const int64_t used = cache->stats().pages_used - cache->sequences().pages_held(*seq, 2);
      used_min = std::min(used_min, used);
      used_max = std::max(used_max, used);
    }
  });
  // Sparse layers' pool usage stays flat while decoding on (page rounding only).
  EXPECT_LE(used_max, rswa_bound + win_bound);
  EXPECT_LE(used_max - used_min, 2);
  // The sink page is still there, released window pages are -1.
  const auto* table = cache->sequences().page_table(*seq, 0);
  ASSERT_NE(table, nullptr);
  EXPECT_GE((*table)[0], 0);
  EXPECT_EQ((*table)[10], -1);
  cache->remove_sequence(*seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

TEST(KVCachePages, WindowReadsFewerPagesThanItHoldsInChunkedPrefill) {
  Shape s;
  auto cache = make_cache(s, {*parse_policy("window:size=64")});
  ThreadPool threads(2);
  const int n = 1000;
  const auto q = random_vec((size_t)n * s.n_head * s.hd, 1);
  const auto k = random_vec((size_t)n * s.n_kv * s.hd, 2);
  run_chunks(*cache, s, params_for(s), q, k, k, split_into(n, {200}), threads);
  const KvStats st = cache->stats();
  EXPECT_GT(st.pages_read, 0);
  // Present counts the held pages up to each block's last query (what dense
  // would read): a 64-token window reads about half of them.
  EXPECT_LT(st.pages_read * 3, st.pages_present * 2);
  EXPECT_EQ(st.pages_used, 0);
  EXPECT_GT(st.peak_pages_used, 0);
  EXPECT_LE(st.peak_pages_used, ceil_div(64 + 200, s.page) + 2);
}

TEST(KVCachePages, ExhaustionIsAStatusAndChangesNothing) {
  Shape s;
  // Two dense layers, budget of 10 pages in all.
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = s.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = s.hd;
  cfg.page_size = s.page;
  cfg.layer_policies = {PolicySpec{}, PolicySpec{}};
  cfg.budget_bytes = 10 * (int64_t)s.page * s.n_kv * s.hd * 2 * 2 + 100;
  auto created = KvManager::create(cfg);
  ASSERT_TRUE(created.ok());
  KvManager& kv = **created;
  StepDriver cache(kv);
  EXPECT_EQ(kv.stats().pages_total, 10);
  auto seq = kv.add_sequence();
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE(cache.reserve(*seq, 20).ok());  // 2 pages per layer
  ASSERT_EQ(kv.stats().pages_used, 4);
  const Status st = cache.reserve(*seq, 100);  // 7 per layer: 10 more needed, 6 free
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(st.message().empty());
  EXPECT_EQ(kv.stats().pages_used, 4);
  EXPECT_EQ(kv.sequences().pages_held(*seq, 0), 2);
  EXPECT_EQ(kv.sequences().pages_held(*seq, 1), 2);
  EXPECT_EQ(kv.length(*seq), 0);
  EXPECT_TRUE(cache.reserve(*seq, 80).ok());  // 5 per layer: 6 more, fits exactly
  EXPECT_EQ(kv.stats().pages_used, 10);
  EXPECT_EQ(cache.reserve(*seq, 81).code(), StatusCode::kResourceExhausted);
  // A second sequence cannot get anything; removing the first frees all.
  auto other = kv.add_sequence();
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(cache.reserve(*other, 1).code(), StatusCode::kResourceExhausted);
  kv.remove_sequence(*seq);
  EXPECT_EQ(kv.stats().pages_used, 0);
  EXPECT_TRUE(cache.reserve(*other, 1).ok());
  EXPECT_EQ(kv.stats().peak_pages_used, 10);
}

TEST(KVCachePages, SequenceIdsAreReusedCleanAndInvalidIdsAreErrors) {
  Shape s;
  auto cache = make_cache(s, {PolicySpec{}});
  ThreadPool threads(1);
  auto a = cache->add_sequence();
  auto b = cache->add_sequence();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  decode(*cache, *a, s, 40, threads, [](int64_t) {});
  EXPECT_EQ(cache->length(*a), 40);
  cache->remove_sequence(*a);
  cache->remove_sequence(*a);  // twice: harmless
  auto c = cache->add_sequence();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a);  // reused
  EXPECT_EQ(cache->length(*c), 0);
  EXPECT_EQ(cache->sequences().pages_held(*c, 0), 0);
  EXPECT_EQ(cache->stats().pages_used, 0);
  StepDriver steps(*cache);
  EXPECT_EQ(steps.reserve(-1, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(steps.reserve(99, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(steps.reserve(*c, -5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(steps.reserve(*c, 0).code(), StatusCode::kInvalidArgument);
  // One sequence twice in one step.
  const SequenceStep twice[2] = {{*c, nullptr, 1}, {*c, nullptr, 1}};
  EXPECT_EQ(cache->prepare(twice).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache->sequences().pages_held(99, 0), 0);
  EXPECT_EQ(cache->sequences().pages_held(*c, 7), 0);
  cache->remove_sequence(99);
}

TEST(KVCachePages, CreateRejectsBadConfigs) {
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = 2;
  cfg.head_dim_k = cfg.head_dim_v = 64;
  cfg.page_size = 16;
  cfg.budget_bytes = 1 << 20;
  EXPECT_EQ(KvManager::create(cfg).status().code(), StatusCode::kInvalidArgument);  // no policies
  cfg.layer_policies = {PolicySpec{}};
  EXPECT_TRUE(KvManager::create(cfg).ok());
  cfg.budget_bytes = 100;  // less than a page
  EXPECT_EQ(KvManager::create(cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.budget_bytes = 1 << 20;
  PolicySpec bad;
  bad.kind = PolicyKind::Window;
  cfg.layer_policies = {bad};  // window 0
  EXPECT_EQ(KvManager::create(cfg).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace stride
