// A forced hash collision in the prefix cache is a miss, never a hit on
// another prompt's KV pages: with a prefix hash that maps every page to the
// same value, a prompt that differs from a cached one reuses nothing, while
// the cached prompt itself is still reused (its pages' tokens match).
#include <gtest/gtest.h>

#include "kv/kv_manager.h"
#include "attention/policy.h"
#include "cache_test_util.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/2, /*n_kv=*/1, /*hd=*/16, /*page=*/8};

std::unique_ptr<KvManager> collision_cache(const char* pol) {
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = kShape.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kShape.hd;
  cfg.page_size = kShape.page;
  cfg.layer_policies = {*parse_policy(pol), *parse_policy(pol)};
  cfg.cache_salt = "collision-test";
  cfg.budget_bytes = (int64_t)64 * kShape.page * kShape.n_kv * 2 * kShape.hd * 2;
  cfg.prefix_hash = [](uint64_t, std::span<const int32_t>) { return uint64_t(0x5eed); };
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(*c) : nullptr;
}

// Writes `ids` (zeros for K/V: only the bookkeeping matters here) and commits them.
void run_prompt(KvManager& cache_kv, KvManager::SeqId seq, const std::vector<int32_t>& ids) {
  StepDriver cache(cache_kv);
  const std::vector<float> kv((size_t)ids.size() * kShape.n_kv * kShape.hd, 0.5f);
  const int start = (int)cache.length(seq);
  const int n = (int)ids.size() - start;
  ASSERT_TRUE(cache.reserve(seq, n).ok());
  for (int l = 0; l < cache.config().n_layer; ++l) cache.write(l, seq, kv.data(), kv.data(), n);
  cache.commit(seq, n, ids.data() + start);
}

std::vector<int32_t> prompt(int n, int32_t base) {
  std::vector<int32_t> ids((size_t)n);
  for (int i = 0; i < n; ++i) ids[(size_t)i] = base + i;
  return ids;
}

class PrefixCollision : public ::testing::TestWithParam<const char*> {};

TEST_P(PrefixCollision, ACollidingPromptMissesAndTheCachedOneStillHits) {
  auto cache = collision_cache(GetParam());
  ASSERT_TRUE(cache);
  const std::vector<int32_t> a = prompt(41, 100);  // 5 full pages + 1
  auto sa = cache->add_sequence_with_prefix(a);
  ASSERT_TRUE(sa.ok());
  EXPECT_EQ(sa->reused_tokens, 0);
  run_prompt(*cache, sa->seq, a);
  cache->remove_sequence(sa->seq);

  // Every page of b hashes like every page of a; the first page differs in
  // one token, the others are a's (so only the prefix before them differs).
  std::vector<int32_t> b = a;
  b[3] += 1;
  auto sb = cache->add_sequence_with_prefix(b);
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->reused_tokens, 0) << "a collision must never hand b the pages of a";
  cache->remove_sequence(sb->seq);

  // Same first page, different second page: only the first page is shared.
  std::vector<int32_t> c = a;
  c[kShape.page + 2] += 1;
  auto sc = cache->add_sequence_with_prefix(c);
  ASSERT_TRUE(sc.ok());
  EXPECT_EQ(sc->reused_tokens, kShape.page);
  cache->remove_sequence(sc->seq);

  auto again = cache->add_sequence_with_prefix(a);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->reused_tokens, 40) << "the prompt itself still hits every full page";
  cache->remove_sequence(again->seq);
}

INSTANTIATE_TEST_SUITE_P(Policies, PrefixCollision, ::testing::Values("dense", "window:size=8"));

}  // namespace
}  // namespace stride
