#pragma once
// One attention layer's keys, values and queries, random, split by position
// into the shards of several ranks: each rank's pool holds only its shard.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../kv/cache_test_util.h"
#include "attention/attention_kernel.h"
#include "attention/attention_reference.h"
#include "core/thread_pool.h"
#include "dist/kv_shard.h"
#include "kernels/rope_table.h"
#include "kv/store/kv_pool.h"

namespace stride::dist::testing {

constexpr int kNkv = 2, kNhead = 6, kHd = 64, kPage = 16;
constexpr int64_t kSegmentKeys = (int64_t)kSegmentPages * kPage;

using testing_util::random_vec;

struct Layer {
  int64_t kv_len = 0;
  KvStorage storage = KvStorage::F16;
  std::vector<float> k, v;  // [kv_len, kNkv, kHd] each
  std::vector<float> sinks;  // [kNhead] attention sink logits, or empty
  RopeTable rope = RopeTable::plain(10000.0, kHd, 1.0, false);

  Layer(int64_t n, KvStorage st, bool with_sinks) : kv_len(n), storage(st) {
    k = random_vec((size_t)n * kNkv * kHd, 1);
    v = random_vec((size_t)n * kNkv * kHd, 2);
    if (with_sinks) sinks = random_vec(kNhead, 5);
  }
  KvPoolShape shape() const { return {kNkv, kHd, kHd, kPage, storage}; }
  AttentionParams params() const {
    AttentionParams p;
    p.n_head = kNhead;
    p.rope = &rope;
    p.sink_logits = sinks.empty() ? nullptr : sinks.data();
    return p;
  }
  // A pool of `pages` pages holding the shard's positions in its pages.
  std::unique_ptr<KvPool> pool_for(const KvShard& shard, int32_t pages) const {
    std::unique_ptr<KvPool> pool = std::move(KvPool::create(shape(), pages)).value();
    const int64_t row = (int64_t)kNkv * kHd;
    for (int64_t first = shard.pos_begin; first < shard.pos_end; first += kPage) {
      const int n = (int)std::min<int64_t>(kPage, shard.pos_end - first);
      pool->store(shard.pool_page((int32_t)((first - shard.pos_begin) / kPage)), 0, n, k.data() + first * row, row,
                  v.data() + first * row, row, first);
    }
    return pool;
  }
  // The scalar reference on what the pages hold (f16-rounded for f16 pages).
  std::vector<float> reference(const PolicySpec& policy, const float* q, int n_q, int64_t q_pos0) const {
    auto stored = [&](std::vector<float> x) {
      if (storage == KvStorage::F16) x = testing_util::f16_round(std::move(x));
      std::vector<int8_t> q8(kHd);
      for (size_t r = 0; storage == KvStorage::Int8 && r < x.size(); r += kHd) {
        const float scale = quantize_row_int8(x.data() + r, kHd, q8.data());
        for (int i = 0; i < kHd; ++i) x[r + i] = q8[i] * scale;
      }
      return x;
    };
    std::vector<float> out((size_t)n_q * kNhead * kHd);
    attention_reference(policy, params(), kNkv, kHd, kHd, q, n_q, q_pos0, stored(k).data(), stored(v).data(),
                        kv_len, out.data());
    return out;
  }
  // The one-host kernel over all the keys in one pool.
  std::vector<float> one_host(const PolicySpec& policy, const float* q, int n_q, int64_t q_pos0,
                              ThreadPool& threads) const {
    const KvShard all{0, kv_len};
    const auto pool = pool_for(all, all.pages(kPage));
    std::vector<int32_t> table(all.pages(kPage));
    for (size_t i = 0; i < table.size(); ++i) table[i] = (int32_t)i;
    AttentionPlan plan = plan_attention(policy, table, kPage, kv_len, q_pos0, n_q, policy_q_block(policy, n_q));
    plan.work = partition_work(plan, kPage, kNkv);
    std::vector<float> out((size_t)n_q * kNhead * kHd);
    const Status ran = attention_paged(*pool, plan, policy, params(), q, out.data(), threads);
    return ran.ok() ? out : std::vector<float>{};
  }
};

// Shards with the given boundaries: {0, b1, ..., kv_len}, each in its pool's
// pages in reverse order (a pool is as scattered as the engine's).
inline std::vector<KvShard> shards_at(const std::vector<int64_t>& bounds) {
  std::vector<KvShard> s;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    KvShard shard{bounds[i], bounds[i + 1]};
    for (int32_t p = shard.pages(kPage) - 1; p >= 0; --p) shard.page_ids.push_back(p);
    s.push_back(shard);
  }
  return s;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace stride::dist::testing
