// The offload tier of the paged KV cache: cached prefix pages evicted from a
// small pool go to a host tier (RAM or a memory-mapped file) and come back on
// a later prefix hit. Pages travel as their exact byte image (f16, f32 and
// int8 alike, int8 scales and top-k summaries included), so the tolerance is
// zero: attention after a restore equals, bit for bit, a fresh recompute
// with the same storage. Also: a full tier drops its least recently used
// slots, a restore the pool cannot take fails cleanly, and accounting returns
// to its baseline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "kv/kv_manager.h"
#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/store/kv_pool.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*page=*/16};
constexpr int kMaxTokens = 160;
constexpr int kChunk = 16;

std::vector<PolicySpec> two_layers() {
  // A top-k layer: its selection reads the page summaries, which must come back too.
  return {*parse_policy("dense"), *parse_policy("topk:sparsity=0.5,sinks=16,window=16")};
}

struct TierSpec {
  int64_t slots = 0;  // 0: no tier
  std::string file;
};

std::unique_ptr<KvManager> make_cache(int32_t n_pages, KvStorage storage, const TierSpec& tier) {
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = kShape.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kShape.hd;
  cfg.page_size = kShape.page;
  cfg.storage = storage;
  cfg.layer_policies = two_layers();
  cfg.cache_salt = "offload-test";
  const KvPoolShape shape{kShape.n_kv, kShape.hd, kShape.hd, kShape.page, storage};
  cfg.budget_bytes = (int64_t)n_pages * shape.bytes_per_page();
  // A slot: page image (K, V, scales, positions) + top-k summaries [n_kv, 2, hd] f32.
  const int64_t slot = shape.bytes_per_page() + kShape.page * 4 + (int64_t)kShape.n_kv * 2 * kShape.hd * 4;
  cfg.offload_bytes = tier.slots * slot;
  cfg.offload_file = tier.file;
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  std::unique_ptr<KvManager> out = std::move(c).value();
  EXPECT_EQ(out->stats().pages_total, n_pages);
  EXPECT_EQ(out->stats().tier_slots_total, tier.slots);
  return out;
}

struct Data {
  std::vector<std::vector<float>> q, k, v;  // [layer][pos, heads, hd]
  explicit Data(uint32_t seed = 0) {
    for (uint32_t l = 0; l < 2; ++l) {
      q.push_back(random_vec((size_t)kMaxTokens * kShape.n_head * kShape.hd, seed + 110 + l));
      k.push_back(random_vec((size_t)kMaxTokens * kShape.n_kv * kShape.hd, seed + 210 + l));
      v.push_back(random_vec((size_t)kMaxTokens * kShape.n_kv * kShape.hd, seed + 310 + l));
    }
  }
};

std::vector<int32_t> token_ids(int n) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 13 + 5) % 997;
  return ids;
}

using Outputs = std::vector<std::vector<float>>;  // [layer][pos, n_head, hd]
Outputs outputs() {
  return Outputs(2, std::vector<float>((size_t)kMaxTokens * kShape.n_head * kShape.hd, 0.f));
}

// Runs positions [length, to) in chunks on both layers; rows land in *out.
Status feed(KvManager& cache_kv, KvManager::SeqId seq, const Data& d, const std::vector<int32_t>& ids, int to,
            Outputs* out = nullptr) {
  StepDriver cache(cache_kv);
  ThreadPool threads(1);
  const AttentionParams p = params_for(kShape);
  const size_t kr = (size_t)kShape.n_kv * kShape.hd, qr = (size_t)kShape.n_head * kShape.hd;
  std::vector<float> scratch(qr * kChunk);
  for (int pos = (int)cache.length(seq); pos < to;) {
    const int c = std::min(kChunk, to - pos);
    STRIDE_RETURN_IF_ERROR(cache.reserve(seq, c));
    for (int l = 0; l < 2; ++l) {
      cache.write(l, seq, d.k[l].data() + pos * kr, d.v[l].data() + pos * kr, c);
      float* o = out ? (*out)[l].data() + pos * qr : scratch.data();
      cache.attend(l, seq, d.q[l].data() + pos * qr, c, p, o, threads);
    }
    cache.commit(seq, c, ids.data() + pos);
    pos += c;
  }
  return Status::Ok();
}

// Fills the whole pool with another prompt (other tokens, other K/V), so
// every cached page is evicted (to the tier, when there is one) and every
// physical page, summaries included, is overwritten; the other prompt's pages
// stay cached.
void evict_everything(KvManager& cache_kv) {
  StepDriver cache(cache_kv);
  static const Data other(/*seed=*/7);
  std::vector<int32_t> ids = token_ids(kMaxTokens);
  for (int32_t& id : ids) id += 5000;
  auto seq = cache.add_sequence();
  ASSERT_TRUE(seq.ok());
  const int tokens = (int)(cache.stats().pages_total / 2) * kShape.page;
  ASSERT_TRUE(feed(cache_kv, *seq, other, ids, tokens).ok());
  EXPECT_EQ(cache.stats().pages_cached, cache.stats().pages_total) << "only the other prompt's pages";
  cache.remove_sequence(*seq);
}

// The rows [from, to) of both layers are bit-identical.
void expect_same_rows(const Outputs& a, const Outputs& b, int from, int to) {
  const size_t qr = (size_t)kShape.n_head * kShape.hd;
  for (int l = 0; l < 2; ++l)
    EXPECT_EQ(std::memcmp(a[l].data() + from * qr, b[l].data() + from * qr, (to - from) * qr * sizeof(float)), 0)
        << "layer " << l;
}

std::string scratch_file(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "." + std::to_string(getpid()))).string();
}

struct RoundTripCase {
  KvStorage storage;
  bool file;
};

class OffloadRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

// 100 tokens cached (6 full pages per layer), all evicted to the tier; a
// prompt of 130 tokens restores 96 and computes the rest.
TEST_P(OffloadRoundTrip, RestoredPrefixGivesBitIdenticalAttention) {
  const RoundTripCase tc = GetParam();
  const std::string path = tc.file ? scratch_file("stride_offload_rt") : "";
  const Data d;
  const auto ids = token_ids(130);
  Outputs restored = outputs(), fresh = outputs();
  {
    auto cache = make_cache(20, tc.storage, {32, path});
    ASSERT_TRUE(cache);
    if (tc.file) {
      EXPECT_FALSE(std::filesystem::exists(path)) << "the tier file is unlinked once created";
    }
    auto a = cache->add_sequence();
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(feed(*cache, *a, d, ids, 100).ok());
    cache->remove_sequence(*a);
    EXPECT_EQ(cache->stats().pages_reclaimable, 12);
    evict_everything(*cache);
    KvStats st = cache->stats();
    EXPECT_EQ(st.pages_offloaded, 12);
    EXPECT_EQ(st.tier_slots_used, 12);
    EXPECT_EQ(st.pages_used, 0);

    auto b = cache->add_sequence_with_prefix(ids);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(b->reused_tokens, 96);
    st = cache->stats();
    EXPECT_EQ(st.pages_restored, 12);
    EXPECT_EQ(st.tier_hits, 12);
    // Restored pages left the tier; the 12 pool pages they took were the
    // other prompt's, which went to the tier in turn.
    EXPECT_EQ(st.pages_offloaded, 24);
    EXPECT_EQ(st.tier_slots_used, 12);
    EXPECT_EQ(st.pages_used, 12);
    EXPECT_EQ(st.pages_cached, 20) << "restored pages are registered in the prefix index again";
    ASSERT_TRUE(feed(*cache, b->seq, d, ids, 130, &restored).ok());
    cache->remove_sequence(b->seq);
    EXPECT_EQ(cache->stats().pages_used, 0) << "accounting back to its baseline";
  }
  if (tc.file) {
    EXPECT_FALSE(std::filesystem::exists(path)) << "the tier file is scratch space";
  }
  {
    // Reference: the same storage, no tier, no reuse; same chunks.
    auto cache = make_cache(20, tc.storage, {});
    ASSERT_TRUE(cache);
    auto r = cache->add_sequence();
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(feed(*cache, *r, d, ids, 96).ok());
    ASSERT_TRUE(feed(*cache, *r, d, ids, 130, &fresh).ok());
  }
  expect_same_rows(restored, fresh, 96, 130);
}

INSTANTIATE_TEST_SUITE_P(Storages, OffloadRoundTrip,
                         ::testing::Values(RoundTripCase{KvStorage::F16, false}, RoundTripCase{KvStorage::F16, true},
                                           RoundTripCase{KvStorage::Int8, false}, RoundTripCase{KvStorage::Int8, true},
                                           RoundTripCase{KvStorage::F32, false}));

TEST(Offload, WithoutTierEvictedPagesAreRecomputed) {
  const Data d;
  const auto ids = token_ids(130);
  auto cache = make_cache(20, KvStorage::F16, {});
  ASSERT_TRUE(cache);
  auto a = cache->add_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(feed(*cache, *a, d, ids, 100).ok());
  cache->remove_sequence(*a);
  evict_everything(*cache);
  auto b = cache->add_sequence_with_prefix(ids);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 0);
  EXPECT_EQ(cache->stats().pages_offloaded, 0);
}

// A tier of 6 slots keeps the 6 pages evicted last. Pages are released
// deepest first, so those are logical pages 0..2 of both layers: a 3-page hit.
TEST(Offload, FullTierDropsLeastRecentlyUsedSlots) {
  const Data d;
  const auto ids = token_ids(130);
  auto cache = make_cache(20, KvStorage::F16, {6, ""});
  ASSERT_TRUE(cache);
  auto a = cache->add_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(feed(*cache, *a, d, ids, 100).ok());
  cache->remove_sequence(*a);
  evict_everything(*cache);
  EXPECT_EQ(cache->stats().pages_offloaded, 12);
  EXPECT_EQ(cache->stats().tier_slots_used, 6);
  auto b = cache->add_sequence_with_prefix(ids);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused_tokens, 48);
  EXPECT_EQ(cache->stats().pages_restored, 6);
  EXPECT_GT(cache->stats().tier_misses, 0) << "pages 3..5 were looked for and not found";
  // The 6 pool pages the restore took were evicted while all 6 slots were
  // pinned by the restore: they were dropped, not offloaded.
  EXPECT_EQ(cache->stats().pages_offloaded, 12);
  cache->remove_sequence(b->seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

// The pool cannot take the 12 pages to restore: ResourceExhausted, nothing
// changes (pool, tier, sequences), and the restore works once room is made.
TEST(Offload, ExhaustedRestoreFailsCleanly) {
  const Data d;
  const auto ids = token_ids(130);
  auto cache = make_cache(20, KvStorage::F16, {32, ""});
  ASSERT_TRUE(cache);
  auto a = cache->add_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(feed(*cache, *a, d, ids, 100).ok());
  cache->remove_sequence(*a);
  evict_everything(*cache);

  auto hog = cache->add_sequence();
  ASSERT_TRUE(hog.ok());
  StepDriver steps(*cache);
  ASSERT_TRUE(steps.reserve(*hog, 8 * kShape.page).ok());  // 16 of 20 pages
  const KvStats before = cache->stats();
  auto b = cache->add_sequence_with_prefix(ids);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("restoring 12 offloaded prefix pages"), std::string::npos)
      << b.status().to_string();
  const KvStats after = cache->stats();
  EXPECT_EQ(after.pages_used, before.pages_used);
  EXPECT_EQ(after.pages_cached, before.pages_cached);
  EXPECT_EQ(after.tier_slots_used, before.tier_slots_used);
  EXPECT_EQ(after.pages_restored, 0);
  auto next = cache->add_sequence();  // the failed sequence's id is free again
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, *hog + 1);
  cache->remove_sequence(*next);

  cache->remove_sequence(*hog);
  auto c = cache->add_sequence_with_prefix(ids);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->reused_tokens, 96);
  cache->remove_sequence(c->seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
}

TEST(Offload, BadTierSettingsAreClearErrors) {
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = 1;
  cfg.head_dim_k = cfg.head_dim_v = 16;
  cfg.page_size = 16;
  cfg.layer_policies = {*parse_policy("dense")};
  cfg.budget_bytes = 1 << 20;
  cfg.offload_bytes = 10;  // less than one slot
  auto small = KvManager::create(cfg);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  cfg.offload_bytes = -1;
  EXPECT_FALSE(KvManager::create(cfg).ok());
  cfg.offload_bytes = 1 << 20;
  cfg.offload_file = "/nonexistent-dir/stride/tier.bin";
  auto nofile = KvManager::create(cfg);
  ASSERT_FALSE(nofile.ok());
  EXPECT_NE(nofile.status().message().find("/nonexistent-dir/stride/tier.bin"), std::string::npos);
}

}  // namespace
}  // namespace stride
