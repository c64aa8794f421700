// Saved sessions at the KV manager: a prompt's pages exported from one
// manager and imported into a fresh one make the continuation's attention
// bit-identical to a run that computed the whole sequence, for dense,
// window, R-SWA and top-k layers and for f16, f32 and int8 pages. A snapshot
// the pool cannot take, or of another page layout, changes nothing.
#include <gtest/gtest.h>

#include <cstring>

#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/kv_manager.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*page=*/16};
constexpr int kSaved = 150;  // 9 whole pages and 6 tokens
constexpr int kTotal = 176;
constexpr int kChunk = 16;

struct Case {
  const char* layer0;
  const char* layer1;
  KvStorage storage;
};

std::unique_ptr<KvManager> make(const Case& c, int32_t n_pages) {
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = kShape.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kShape.hd;
  cfg.page_size = kShape.page;
  cfg.storage = c.storage;
  cfg.layer_policies = {*parse_policy(c.layer0), *parse_policy(c.layer1)};
  cfg.cache_salt = "session-test";
  cfg.budget_bytes = (int64_t)n_pages * KvPoolShape{kShape.n_kv, kShape.hd, kShape.hd, kShape.page, c.storage}.bytes_per_page();
  auto m = KvManager::create(cfg);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

struct Data {
  std::vector<std::vector<float>> q, k, v;  // [layer][pos, heads, hd]
  std::vector<int32_t> ids;
  Data() {
    for (uint32_t l = 0; l < 2; ++l) {
      q.push_back(random_vec((size_t)kTotal * kShape.n_head * kShape.hd, 11 + l));
      k.push_back(random_vec((size_t)kTotal * kShape.n_kv * kShape.hd, 21 + l));
      v.push_back(random_vec((size_t)kTotal * kShape.n_kv * kShape.hd, 31 + l));
    }
    for (int i = 0; i < kTotal; ++i) ids.push_back((i * 37 + 3) % 1000);
  }
};

using Outputs = std::vector<std::vector<float>>;  // [layer][pos, n_head, hd]

// Positions [length, to) in chunks of 16 cut at multiples of 16, both layers.
void feed(KvManager& kv, KvManager::SeqId seq, const Data& d, int to, Outputs& out) {
  StepDriver cache(kv);
  ThreadPool threads(1);
  const AttentionParams p = params_for(kShape);
  const size_t kr = (size_t)kShape.n_kv * kShape.hd, qr = (size_t)kShape.n_head * kShape.hd;
  for (int pos = (int)cache.length(seq); pos < to;) {
    const int c = std::min(kChunk - pos % kChunk, to - pos);
    ASSERT_TRUE(cache.reserve(seq, c).ok());
    for (int l = 0; l < 2; ++l) {
      cache.write(l, seq, d.k[l].data() + pos * kr, d.v[l].data() + pos * kr, c);
      cache.attend(l, seq, d.q[l].data() + pos * qr, c, p, out[l].data() + pos * qr, threads);
    }
    cache.commit(seq, c, d.ids.data() + pos);
    pos += c;
  }
}

Outputs blank() { return Outputs(2, std::vector<float>((size_t)kTotal * kShape.n_head * kShape.hd, 0.f)); }

class KvSession : public testing::TestWithParam<Case> {};

TEST_P(KvSession, RestoredPrefixContinuesBitIdentically) {
  const Data d;
  // The reference: one manager computes all kTotal positions.
  Outputs want = blank();
  {
    auto kv = make(GetParam(), 64);
    auto seq = kv->add_sequence();
    ASSERT_TRUE(seq.ok());
    feed(*kv, *seq, d, kTotal, want);
  }
  // Save: prefill the first kSaved tokens and export while the sequence holds them.
  KvSnapshot snap;
  {
    auto kv = make(GetParam(), 64);
    auto seq = kv->add_sequence();
    ASSERT_TRUE(seq.ok());
    Outputs scratch = blank();
    feed(*kv, *seq, d, kSaved, scratch);
    auto got = kv->sessions().export_prefix(std::span<const int32_t>(d.ids.data(), kSaved));
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    snap = std::move(*got);
  }
  EXPECT_EQ(snap.n_pages, kSaved / kShape.page);
  EXPECT_EQ((int64_t)snap.tokens.size(), kSaved);
  EXPECT_EQ((int64_t)snap.images.size(), (int64_t)snap.pages.size() * snap.image_bytes);
  // Restore into a fresh manager: the continuation is a prefix hit on every saved page.
  auto kv = make(GetParam(), 64);
  auto loaded = kv->sessions().import_prefix(snap);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, (int64_t)snap.pages.size());
  EXPECT_EQ(kv->stats().pages_used, 0);
  auto hit = kv->add_sequence_with_prefix(d.ids);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->reused_tokens, snap.covered_tokens());
  Outputs got = blank();
  feed(*kv, hit->seq, d, kTotal, got);
  const size_t qr = (size_t)kShape.n_head * kShape.hd;
  const size_t from = (size_t)snap.covered_tokens();
  for (int l = 0; l < 2; ++l)
    EXPECT_EQ(std::memcmp(got[l].data() + from * qr, want[l].data() + from * qr, (kTotal - from) * qr * sizeof(float)), 0)
        << "layer " << l;
  // Importing again changes nothing: the pages are cached already.
  kv->remove_sequence(hit->seq);
  auto again = kv->sessions().import_prefix(snap);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, KvSession,
    testing::Values(Case{"dense", "dense", KvStorage::F16}, Case{"dense", "dense", KvStorage::F32},
                    Case{"dense", "dense", KvStorage::Int8}, Case{"window:size=40", "dense", KvStorage::F16},
                    Case{"rswa:sinks=4,window=36", "dense", KvStorage::F16},
                    Case{"rswa:sinks=4,window=36,pos=rel", "window:size=20", KvStorage::Int8},
                    Case{"dense", "topk:sparsity=0.5,sinks=16,window=16", KvStorage::F16}));

TEST(KvSessionLimits, APoolTooSmallOrAnotherLayoutChangesNothing) {
  const Case c{"dense", "dense", KvStorage::F16};
  const Data d;
  KvSnapshot snap;
  {
    auto kv = make(c, 64);
    auto seq = kv->add_sequence();
    Outputs scratch = blank();
    feed(*kv, *seq, d, kSaved, scratch);
    snap = std::move(*kv->sessions().export_prefix(std::span<const int32_t>(d.ids.data(), kSaved)));
  }
  auto small = make(c, 8);  // 18 pages needed
  auto r = small->sessions().import_prefix(snap);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(small->stats().pages_used, 0);
  EXPECT_EQ(small->stats().pages_cached, 0);
  auto other = make(c, 64);
  KvSnapshot bad = snap;
  bad.page_size = 32;
  EXPECT_EQ(other->sessions().import_prefix(bad).status().code(), StatusCode::kInvalidArgument);
  bad = snap;
  bad.pages.back().layer = 2;
  EXPECT_EQ(other->sessions().import_prefix(bad).status().code(), StatusCode::kInvalidArgument);
  bad = snap;
  bad.images.pop_back();
  EXPECT_EQ(other->sessions().import_prefix(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(other->stats().pages_cached, 0);
  // Pages evicted before the export: refused, not saved incomplete.
  auto kv = make(c, 64);
  EXPECT_EQ(kv->sessions().export_prefix(std::span<const int32_t>(d.ids.data(), kSaved)).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stride
