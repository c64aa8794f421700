#pragma once
// What the top-k hot-set tests share: a KV manager with a top-k policy (and
// an offload tier), and the same random queries, keys and values for every
// run, so runs can be compared bit for bit.
#include <memory>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/kv_manager.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride::testing_util {

inline const Shape kS;  // 6 query heads, 2 kv heads, head_dim 64, 16-token pages
constexpr int kLayers = 2;
constexpr int kTok = 400;  // 25 pages

struct TierSpec {
  int64_t slots = 0;  // 0: no tier
  std::string file;
};

inline int64_t slot_bytes(KvStorage storage) {
  const KvPoolShape shape{kS.n_kv, kS.hd, kS.hd, kS.page, storage};
  auto pool = KvPool::create(shape, 1);
  EXPECT_TRUE(pool.ok());
  return (*pool)->page_image_bytes() + PageSummaries::page_bytes(kS.n_kv, kS.hd);
}

inline std::unique_ptr<KvManager> make_topk_cache(const std::string& policy, int32_t n_pages, const TierSpec& tier,
                                                 KvStorage storage = KvStorage::F16) {
  KvManagerConfig cfg;
  cfg.n_layer = kLayers;
  cfg.n_kv_heads = kS.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kS.hd;
  cfg.page_size = kS.page;
  cfg.storage = storage;
  cfg.layer_policies.assign(kLayers, *parse_policy(policy));
  cfg.cache_salt = "topk-offload-test";
  const KvPoolShape shape{kS.n_kv, kS.hd, kS.hd, kS.page, storage};
  cfg.budget_bytes = (int64_t)n_pages * shape.bytes_per_page();
  cfg.offload_bytes = tier.slots * slot_bytes(storage);
  cfg.offload_file = tier.file;
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::move(c).value();
}

struct Data {
  std::vector<float> q[kLayers], k[kLayers], v[kLayers];
  Data() {
    for (int l = 0; l < kLayers; ++l) {
      q[l] = random_vec((size_t)kTok * kS.n_head * kS.hd, 41 + l);
      k[l] = random_vec((size_t)kTok * kS.n_kv * kS.hd, 51 + l);
      v[l] = random_vec((size_t)kTok * kS.n_kv * kS.hd, 61 + l);
    }
  }
};
inline const Data& data() {
  static const Data d;
  return d;
}

// Commit token ids, so full pages are registered in the prefix cache.
inline std::vector<int32_t> token_ids() {
  std::vector<int32_t> ids(kTok);
  for (int i = 0; i < kTok; ++i) ids[i] = (i * 7 + 3) % 501;
  return ids;
}

}  // namespace stride::testing_util
