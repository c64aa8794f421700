// The KV manager's shared tier with an in-memory store: replica A's
// committed full pages are published; replica B, with an empty pool, takes
// them on a prefix lookup and holds page images byte-identical to A's (f16
// and int8 pages, top-k summaries included), so attention over them is A's.
// A damaged value stops the import there (the pages before it are used and
// the value is rejected); another secret or model shares nothing; a small
// pool imports only what fits beside the rest of the prompt.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/kv_manager.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*page=*/16};
constexpr const char* kSecret = "unit-test-secret-0123456789";

// Publishes at once, answers from a map; what a Redis would hold.
class MapStore : public SharedPageStore {
 public:
  std::map<std::string, std::string> values;
  std::vector<std::string> rejected;
  MapStore() { counters_.up = 1; }
  std::vector<std::string> lookup_prefix(std::span<const std::string> keys) override {
    std::vector<std::string> out;
    for (const std::string& k : keys) {
      auto it = values.find(k);
      if (it == values.end()) break;
      out.push_back(it->second);
    }
    counters_.misses += (int64_t)(keys.size() - out.size());
    return out;
  }
  void publish(std::string key, std::string value) override {
    ++counters_.published;
    values[std::move(key)] = std::move(value);
  }
  void reject(const std::string& key) override {
    ++counters_.errors;
    rejected.push_back(key);
    values.erase(key);
  }
  SharedTierCounters& counters() override { return counters_; }
  std::string describe() const override { return "map"; }

 private:
  SharedTierCounters counters_;
};

std::unique_ptr<KvManager> replica(KvStorage storage, int32_t n_pages, std::string salt = "model-a") {
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = kShape.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kShape.hd;
  cfg.page_size = kShape.page;
  cfg.storage = storage;
  cfg.layer_policies = {*parse_policy("dense"), *parse_policy("topk:sparsity=0.5,sinks=16,window=16")};
  cfg.cache_salt = std::move(salt);
  const KvPoolShape shape{kShape.n_kv, kShape.hd, kShape.hd, kShape.page, storage};
  cfg.budget_bytes = (int64_t)n_pages * shape.bytes_per_page();
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

std::vector<int32_t> prompt_ids(int n) {
  std::vector<int32_t> ids((size_t)n);
  for (int i = 0; i < n; ++i) ids[(size_t)i] = 100 + (i * 37) % 900;
  return ids;
}

// Computes `ids` on a fresh sequence of kv in chunks of 16 (random K/V); the sequence stays.
KvManager::SeqId compute(KvManager& kv, const std::vector<int32_t>& ids) {
  StepDriver d(kv);
  auto seq = d.add_sequence();
  EXPECT_TRUE(seq.ok());
  const int n = (int)ids.size();
  const auto k = random_vec((size_t)n * kShape.n_kv * kShape.hd, 7);
  const auto v = random_vec((size_t)n * kShape.n_kv * kShape.hd, 8);
  const auto q = random_vec((size_t)16 * kShape.n_head * kShape.hd, 9);
  std::vector<float> out((size_t)16 * kShape.n_head * kShape.hd);
  ThreadPool threads(1);
  for (int at = 0; at < n; at += 16) {
    const int c = std::min(16, n - at);
    EXPECT_TRUE(d.reserve(*seq, c).ok());
    for (int l = 0; l < 2; ++l) {
      const size_t off = (size_t)at * kShape.n_kv * kShape.hd;
      d.write(l, *seq, k.data() + off, v.data() + off, c);
      d.attend(l, *seq, q.data(), c, params_for(kShape), out.data(), threads);
    }
    d.commit(*seq, c, ids.data() + at);
  }
  return *seq;
}

std::vector<uint8_t> image(const KvManager& kv, int32_t page) {
  std::vector<uint8_t> out((size_t)kv.pool().page_image_bytes());
  kv.pool().save_page(page, out);
  return out;
}

// Replica A with its store, after computing `ids`.
struct Publisher {
  std::unique_ptr<KvManager> kv;
  MapStore* store = nullptr;
  KvManager::SeqId seq = -1;
};

Publisher publish(const std::vector<int32_t>& ids, KvStorage storage = KvStorage::F16) {
  Publisher a;
  a.kv = replica(storage, 64);
  auto store = std::make_unique<MapStore>();
  a.store = store.get();
  EXPECT_TRUE(a.kv->attach_shared_tier(std::move(store), kSecret, "k:").ok());
  a.seq = compute(*a.kv, ids);
  return a;
}

// Replica B, reading a copy of what A published; *store: its store.
std::unique_ptr<KvManager> reader(const MapStore& published, MapStore** store, KvStorage storage = KvStorage::F16,
                                  int32_t n_pages = 64, const std::string& secret = kSecret,
                                  const std::string& salt = "model-a") {
  auto b = replica(storage, n_pages, salt);
  auto s = std::make_unique<MapStore>();
  s->values = published.values;
  if (store) *store = s.get();
  EXPECT_TRUE(b->attach_shared_tier(std::move(s), secret, "k:").ok());
  return b;
}

class SharedTierImport : public ::testing::TestWithParam<KvStorage> {};

TEST_P(SharedTierImport, ReplicaBHoldsReplicaAsPagesByteForByte) {
  const std::vector<int32_t> ids = prompt_ids(5 * 16 + 3);
  Publisher a = publish(ids, GetParam());
  EXPECT_EQ(a.store->values.size(), 5u);
  EXPECT_EQ(a.kv->stats().shared_tier_published, 5);
  MapStore* sb = nullptr;
  auto b = reader(*a.store, &sb, GetParam());
  auto hit = b->add_sequence_with_prefix(ids);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->reused_tokens, 5 * 16);
  EXPECT_EQ(b->stats().shared_tier_hits, 5);
  EXPECT_TRUE(sb->rejected.empty());
  for (int l = 0; l < 2; ++l)
    for (int p = 0; p < 5; ++p) {
      const int32_t pa = (*a.kv->sequences().page_table(a.seq, l))[(size_t)p], pb = (*b->sequences().page_table(hit->seq, l))[(size_t)p];
      ASSERT_GE(pb, 0);
      EXPECT_EQ(image(*a.kv, pa), image(*b, pb)) << "layer " << l << " page " << p;
    }
  // B took its pages from a cache: it publishes nothing of them.
  EXPECT_EQ(b->stats().shared_tier_published, 0);
}

INSTANTIATE_TEST_SUITE_P(Storage, SharedTierImport, ::testing::Values(KvStorage::F16, KvStorage::Int8));

TEST(SharedTierImportFaults, DamagedValueStopsTheImportThere) {
  const std::vector<int32_t> ids = prompt_ids(4 * 16 + 1);
  Publisher a = publish(ids);
  ASSERT_EQ(a.store->values.size(), 4u);
  // Page 2's value: its token ids sit after the 88-byte header.
  std::string damaged_key;
  for (auto& [key, value] : a.store->values)
    if (std::memcmp(value.data() + 88, ids.data() + 32, 16 * 4) == 0) damaged_key = key;
  ASSERT_FALSE(damaged_key.empty());
  a.store->values[damaged_key][a.store->values[damaged_key].size() / 2] ^= 1;
  MapStore* sb = nullptr;
  auto b = reader(*a.store, &sb);
  auto hit = b->add_sequence_with_prefix(ids);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->reused_tokens, 2 * 16);
  EXPECT_EQ(b->stats().shared_tier_hits, 2);
  EXPECT_EQ(b->stats().shared_tier_errors, 1);
  ASSERT_EQ(sb->rejected.size(), 1u);
  EXPECT_EQ(sb->rejected[0], damaged_key);
}

TEST(SharedTierImportFaults, AnotherSecretOrModelSharesNothing) {
  const std::vector<int32_t> ids = prompt_ids(3 * 16 + 1);
  Publisher a = publish(ids);
  for (const auto& [secret, salt] : {std::pair<std::string, std::string>{"another-secret-0123456", "model-a"},
                                     {kSecret, "model-b"}}) {
    auto b = reader(*a.store, nullptr, KvStorage::F16, 64, secret, salt);
    auto hit = b->add_sequence_with_prefix(ids);
    ASSERT_TRUE(hit.ok());
    EXPECT_EQ(hit->reused_tokens, 0) << salt;
    EXPECT_EQ(b->stats().shared_tier_hits, 0);
    EXPECT_EQ(b->stats().shared_tier_misses, 3);
  }
}

TEST(SharedTierImportFaults, SmallPoolImportsWhatFits) {
  const std::vector<int32_t> ids = prompt_ids(8 * 16 + 1);
  Publisher a = publish(ids);
  // 12 pool pages for 2 layers: (12 - 2 * 2) / 2 = 4 whole pages fit beside the rest.
  auto b = reader(*a.store, nullptr, KvStorage::F16, 12);
  auto hit = b->add_sequence_with_prefix(ids);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->reused_tokens, 4 * 16);
  EXPECT_EQ(b->stats().shared_tier_hits, 4);
}

TEST(SharedTierImportFaults, AttachChecksItsArguments) {
  auto a = replica(KvStorage::F16, 16);
  EXPECT_FALSE(a->attach_shared_tier(nullptr, kSecret, "k:").ok());
  EXPECT_FALSE(a->attach_shared_tier(std::make_unique<MapStore>(), "short", "k:").ok());
}

}  // namespace
}  // namespace stride
