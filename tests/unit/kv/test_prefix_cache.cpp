// Prefix caching in the paged KV cache, with random K/V that depend only on
// the token position (as a model's do for one prefix): a hit maps the same
// physical pages, gives bit-identical attention to recomputing, respects the
// pages windowed layers need, and never leaks or crashes when the pool runs out.
#include <gtest/gtest.h>

#include <numeric>

#include "kv/kv_manager.h"
#include "attention/policy.h"
#include "cache_test_util.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*page=*/16};
constexpr int kMaxTokens = 256;

PolicySpec policy(const char* text) { return *parse_policy(text); }

std::unique_ptr<KvManager> make_paged(std::vector<PolicySpec> pols, int32_t n_pages,
                                         bool prefix_cache = true) {
  KvManagerConfig cfg;
  cfg.n_layer = (int)pols.size();
  cfg.n_kv_heads = kShape.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kShape.hd;
  cfg.page_size = kShape.page;
  cfg.layer_policies = std::move(pols);
  cfg.prefix_cache = prefix_cache;
  cfg.cache_salt = "test-model";
  cfg.budget_bytes = (int64_t)n_pages * kShape.page * kShape.n_kv * 2 * kShape.hd * 2;
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  std::unique_ptr<KvManager> out = std::move(c).value();
  EXPECT_EQ(out->stats().pages_total, n_pages);
  return out;
}

// Per layer q/k/v rows for positions [0, kMaxTokens), fixed per position.
struct Data {
  std::vector<std::vector<float>> q, k, v;  // [layer][pos, heads, hd]
  explicit Data(int n_layer) {
    for (int l = 0; l < n_layer; ++l) {
      q.push_back(random_vec((size_t)kMaxTokens * kShape.n_head * kShape.hd, 100 + l));
      k.push_back(random_vec((size_t)kMaxTokens * kShape.n_kv * kShape.hd, 200 + l));
      v.push_back(random_vec((size_t)kMaxTokens * kShape.n_kv * kShape.hd, 300 + l));
    }
  }
};

std::vector<int32_t> token_ids(int n, int32_t salt = 0) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 7 + 3) % 1000 + salt;
  return ids;
}

// Runs positions [length, to) of `ids` in chunks, on every layer; the
// attention output rows land in out[layer] (sized [kMaxTokens, n_head, hd]).
Status feed(KvManager& cache_kv, KvManager::SeqId seq, const Data& d, const std::vector<int32_t>& ids,
            int to, int chunk, std::vector<std::vector<float>>* out = nullptr) {
  StepDriver cache(cache_kv);
  ThreadPool threads(2);
  const AttentionParams p = params_for(kShape);
  const size_t kr = (size_t)kShape.n_kv * kShape.hd, qr = (size_t)kShape.n_head * kShape.hd;
  std::vector<float> scratch(qr * chunk);
  for (int pos = (int)cache.length(seq); pos < to;) {
    const int c = std::min(chunk, to - pos);
    STRIDE_RETURN_IF_ERROR(cache.reserve(seq, c));
    for (int l = 0; l < cache.config().n_layer; ++l) {
      cache.write(l, seq, d.k[l].data() + pos * kr, d.v[l].data() + pos * kr, c);
      float* o = out ? (*out)[l].data() + pos * qr : scratch.data();
      cache.attend(l, seq, d.q[l].data() + pos * qr, c, p, o, threads);
    }
    cache.commit(seq, c, ids.data() + pos);
    pos += c;
  }
  return Status::Ok();
}

std::vector<std::vector<float>> outputs(int n_layer) {
  return std::vector<std::vector<float>>(
      n_layer, std::vector<float>((size_t)kMaxTokens * kShape.n_head * kShape.hd, 0.f));
}

// Allocates every reclaimable page through a throwaway sequence (so the
// cache holds only what sequences reference), then frees that sequence.
void evict_everything(KvManager& cache_kv) {
  StepDriver cache(cache_kv);
  auto seq = cache.add_sequence();
  ASSERT_TRUE(seq.ok());
  const int n_layer = cache.config().n_layer;
  // The sequence never commits: each reserve adds one page on every layer.
  while (cache.stats().pages_total - cache.stats().pages_used >= n_layer)
    ASSERT_TRUE(cache.reserve(*seq, (int)(cache.pages_held(*seq, 0) + 1) * kShape.page).ok());
  EXPECT_EQ(cache.stats().pages_reclaimable, 0);
  cache.remove_sequence(*seq);
}

}  // namespace

TEST(PrefixCache, HitSharesThePhysicalPagesAndCountsTokens) {
  auto cache = make_paged({policy("dense"), policy("dense")}, 64);
  const Data d(2);
  const auto ids = token_ids(130);
  auto a = cache->add_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(feed(*cache, *a, d, ids, 100, 16).ok());
  const int64_t used_a = cache->stats().pages_used;
  EXPECT_EQ(cache->stats().pages_cached, 2 * 6) << "6 full pages on each layer";

  auto b = cache->add_sequence_with_prefix(ids);  // 130 tokens; A has 96 in full pages
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 96);
  EXPECT_EQ(cache->length(b->seq), 96);
  EXPECT_EQ(cache->stats().pages_used, used_a) << "shared, not copied";
  for (int l = 0; l < 2; ++l) {
    const auto& ta = *cache->sequences().page_table(*a, l);
    const auto& tb = *cache->sequences().page_table(b->seq, l);
    ASSERT_EQ(tb.size(), 6u);
    EXPECT_TRUE(std::equal(tb.begin(), tb.end(), ta.begin())) << "layer " << l;
    EXPECT_EQ(cache->sequences().pages_held(b->seq, l), 6);
  }
  const KvStats st = cache->stats();
  EXPECT_EQ(st.prefix_queries, 1);
  EXPECT_EQ(st.prefix_query_tokens, 130);
  EXPECT_EQ(st.prefix_hits, 1);
  EXPECT_EQ(st.prefix_hit_tokens, 96);

  // A different first token shares nothing.
  auto other = token_ids(130);
  other[0] += 1;
  auto c = cache->add_sequence_with_prefix(other);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reused_tokens, 0);
  // The last prompt token is always left to compute: a 97-token prompt can
  // reuse 96, a 96-token one only 80.
  auto e = cache->add_sequence_with_prefix(std::span(ids).first(96));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->reused_tokens, 80);

  for (auto s : {*a, b->seq, c->seq, e->seq}) cache->remove_sequence(s);
  EXPECT_EQ(cache->stats().pages_used, 0);
  EXPECT_EQ(cache->stats().pages_reclaimable, cache->stats().pages_cached);
}

TEST(PrefixCache, HitGivesBitIdenticalAttentionToRecomputing) {
  const std::vector<PolicySpec> pols = {policy("dense"), policy("rswa:sinks=4,window=20"),
                                        policy("window:size=24")};
  const Data d(3);
  const auto ids = token_ids(150);
  auto cached = make_paged(pols, 128);
  auto a = cached->add_sequence();
  ASSERT_TRUE(feed(*cached, *a, d, ids, 120, 16).ok());
  cached->remove_sequence(*a);
  auto b = cached->add_sequence_with_prefix(ids);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 112);
  auto hit_out = outputs(3);
  ASSERT_TRUE(feed(*cached, b->seq, d, ids, 150, 16, &hit_out).ok());

  auto fresh = make_paged(pols, 128, /*prefix_cache=*/false);
  auto r = fresh->add_sequence_with_prefix(ids);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reused_tokens, 0) << "prefix cache off";
  auto ref_out = outputs(3);
  ASSERT_TRUE(feed(*fresh, r->seq, d, ids, 150, 16, &ref_out).ok());
  const size_t qr = (size_t)kShape.n_head * kShape.hd;
  for (int l = 0; l < 3; ++l)
    for (size_t i = 112 * qr; i < 150 * qr; ++i)
      ASSERT_EQ(hit_out[l][i], ref_out[l][i]) << "layer " << l << " element " << i;
  EXPECT_EQ(fresh->stats().pages_cached, 0) << "nothing registered with the cache off";
}

// A windowed layer needs only the pages its policy keeps for the next query:
// a hit survives the eviction of pages it released long ago, but not of a
// page that is still needed.
class PrefixCacheWindowed : public ::testing::TestWithParam<const char*> {};

TEST_P(PrefixCacheWindowed, HitOnlyWhenNeededPagesArePresent) {
  const PolicySpec windowed = policy(GetParam());
  const bool sinks = windowed.kind == PolicyKind::RSWA;  // page 0 stays needed
  // Sized so that what A does not reference is a multiple of 2 pages.
  auto cache = make_paged({policy("dense"), windowed}, sinks ? 29 : 28);
  const Data d(2);
  const auto ids = token_ids(140);
  auto a = cache->add_sequence();
  ASSERT_TRUE(feed(*cache, *a, d, ids, 96, 16).ok());
  // At length 96 (next query 96, window 20) the windowed layer holds pages 4
  // and 5 (positions > 76), plus page 0 with sinks; pages 1-3 went back.
  const auto& wt = *cache->sequences().page_table(*a, 1);
  EXPECT_EQ(wt[1], -1);
  EXPECT_EQ(wt[3], -1);
  EXPECT_GE(wt[4], 0);
  EXPECT_EQ(wt[0] >= 0, sinks);
  EXPECT_GT(cache->stats().pages_reclaimable, 0) << "released pages stay cached";
  evict_everything(*cache);

  auto b = cache->add_sequence_with_prefix(std::span(ids).first(100));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 96) << "the released pages are not needed at 96";
  const auto& bt = *cache->sequences().page_table(b->seq, 1);
  ASSERT_EQ(bt.size(), 6u);
  EXPECT_EQ(bt[0], sinks ? wt[0] : -1);
  EXPECT_EQ(bt[2], -1);
  EXPECT_EQ(bt[4], wt[4]);
  EXPECT_EQ(bt[5], wt[5]);
  EXPECT_EQ(cache->sequences().pages_held(b->seq, 1), sinks ? 3 : 2);
  cache->remove_sequence(b->seq);

  // A moves on to 128: the windowed layer releases pages 4 and 5 (cached).
  // Once they are evicted no length up to 96 can be reused: at 96 the window
  // needs pages 4-5, at 80 pages 3-4, and so on down to page 0 at 16, which
  // only the sink layer still holds.
  ASSERT_TRUE(feed(*cache, *a, d, ids, 128, 16).ok());
  EXPECT_EQ((*cache->sequences().page_table(*a, 1))[4], -1);
  EXPECT_EQ((*cache->sequences().page_table(*a, 1))[5], -1);
  evict_everything(*cache);
  auto c = cache->add_sequence_with_prefix(std::span(ids).first(100));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reused_tokens, sinks ? 16 : 0);
  cache->remove_sequence(c->seq);
  cache->remove_sequence(*a);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

INSTANTIATE_TEST_SUITE_P(Policies, PrefixCacheWindowed,
                         ::testing::Values("window:size=20", "rswa:sinks=4,window=20"));

TEST(PrefixCache, TopKLayersKeepEveryPageAndShareThem) {
  auto cache = make_paged({policy("topk:sparsity=0.5"), policy("dense")}, 64);
  const Data d(2);
  const auto ids = token_ids(120);
  auto a = cache->add_sequence();
  ASSERT_TRUE(feed(*cache, *a, d, ids, 100, 16).ok());
  cache->remove_sequence(*a);
  auto b = cache->add_sequence_with_prefix(ids);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 96);
  EXPECT_EQ(cache->sequences().pages_held(b->seq, 0), 6);
  ASSERT_TRUE(feed(*cache, b->seq, d, ids, 120, 16).ok());
  cache->remove_sequence(b->seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

TEST(PrefixCache, AfterRemovalNothingIsUsedAndCachedPagesAreReclaimed) {
  constexpr int32_t kPages = 24;
  auto cache = make_paged({policy("dense"), policy("rswa:sinks=4,window=20")}, kPages);
  const Data d(2);
  for (int32_t salt = 0; salt < 3; ++salt) {
    const auto ids = token_ids(90, salt * 1000);
    auto a = cache->add_sequence_with_prefix(ids);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(feed(*cache, a->seq, d, ids, 90, 32).ok());
    auto b = cache->add_sequence_with_prefix(ids);  // shares a's pages while a lives
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->reused_tokens, 80);
    ASSERT_TRUE(feed(*cache, b->seq, d, ids, 90, 32).ok());
    cache->remove_sequence(a->seq);
    cache->remove_sequence(b->seq);
    EXPECT_EQ(cache->stats().pages_used, 0);
  }
  const KvStats st = cache->stats();
  EXPECT_GT(st.pages_cached, 0);
  EXPECT_EQ(st.pages_reclaimable, st.pages_cached);
  EXPECT_GT(st.pages_evicted, 0) << "three prompts do not fit: older pages were evicted";
  // The whole pool is still allocatable.
  auto c = cache->add_sequence();
  StepDriver steps(*cache);
  ASSERT_TRUE(steps.reserve(*c, kPages / 2 * kShape.page).ok());
  EXPECT_EQ(cache->stats().pages_used, kPages);
  EXPECT_EQ(cache->stats().pages_cached, 0);
  cache->remove_sequence(*c);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

TEST(PrefixCache, ExhaustionAfterAHitIsAnErrorWithNoStateChange) {
  auto cache = make_paged({policy("dense"), policy("dense")}, 20);
  const Data d(2);
  const auto ids = token_ids(200);
  auto a = cache->add_sequence();
  ASSERT_TRUE(feed(*cache, *a, d, ids, 128, 32).ok());  // 8 pages per layer: 16 of 20
  auto b = cache->add_sequence_with_prefix(ids);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 128);
  const KvStats before = cache->stats();
  // 72 more tokens need 5 pages per layer: 10 > 4 free.
  const Status st = feed(*cache, b->seq, d, ids, 200, 72);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  const KvStats after = cache->stats();
  EXPECT_EQ(after.pages_used, before.pages_used);
  EXPECT_EQ(after.pages_cached, before.pages_cached);
  EXPECT_EQ(cache->length(b->seq), 128);
  EXPECT_EQ(cache->sequences().page_table(b->seq, 0)->size(), 8u);
  // Smaller steps fit until the pool is really full; then the same error.
  EXPECT_TRUE(feed(*cache, b->seq, d, ids, 160, 32).ok());
  EXPECT_EQ(feed(*cache, b->seq, d, ids, 200, 8).code(), StatusCode::kResourceExhausted);
  cache->remove_sequence(b->seq);
  cache->remove_sequence(*a);
  EXPECT_EQ(cache->stats().pages_used, 0);
  EXPECT_EQ(cache->stats().pages_reclaimable, cache->stats().pages_cached);
}

}  // namespace stride
