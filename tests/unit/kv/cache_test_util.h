#pragma once
// Shared helpers of the KvManager tests: random data, a driver that feeds a
// KvManager chunk by chunk, and the f16-rounded scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <map>
#include <span>

#include "attention/attention_kernel.h"
#include "attention/attention_reference.h"
#include "kv/kv_manager.h"
#include "core/fp16.h"

namespace stride::testing_util {

struct Shape {
  int n_head = 6;
  int n_kv = 2;
  int hd = 64;
  int page = 16;
};

inline std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

inline std::vector<float> f16_round(std::vector<float> v) {
  for (float& x : v) x = fp16_to_fp32(fp32_to_fp16(x));
  return v;
}

// A NeoX RoPE table (base 10000) per head size, alive for the whole test run.
inline const RopeTable* neox_rope(int head_dim) {
  static std::map<int, RopeTable> tables;
  auto it = tables.find(head_dim);
  if (it == tables.end()) it = tables.emplace(head_dim, RopeTable::plain(10000.0, head_dim, 1.0, true)).first;
  return &it->second;
}

inline AttentionParams params_for(const Shape& s, float softcap = 0.f) {
  AttentionParams p;
  p.n_head = s.n_head;
  p.scale = 1.f / std::sqrt((float)s.hd);
  p.softcap = softcap;
  p.rope = neox_rope(s.hd);
  return p;
}

// One sequence at a time through KvManager's step (prepare, write, select +
// the stateless kernel, commit), as the cache tests drive it: reserve()
// prepares a one-sequence plan, commit() commits it.
class StepDriver {
 public:
  explicit StepDriver(KvManager& kv) : kv_(kv) {}
  KvManager& kv() { return kv_; }
  const KvManager& kv() const { return kv_; }
  // The manager's own calls, so a test reads as one object.
  const KvManagerConfig& config() const { return kv_.config(); }
  KvStats stats() const { return kv_.stats(); }
  int64_t length(KvManager::SeqId seq) const { return kv_.length(seq); }
  int64_t pages_held(KvManager::SeqId seq, int layer) const { return kv_.sequences().pages_held(seq, layer); }
  const std::vector<int32_t>* page_table(KvManager::SeqId seq, int layer) const { return kv_.sequences().page_table(seq, layer); }
  Expected<KvManager::SeqId> add_sequence() { return kv_.add_sequence(); }
  Expected<KvManager::PrefixHit> add_sequence_with_prefix(std::span<const int32_t> prompt) {
    return kv_.add_sequence_with_prefix(prompt);
  }
  void remove_sequence(KvManager::SeqId seq) {
    plans_.erase(seq);
    kv_.remove_sequence(seq);
  }

  Status reserve(KvManager::SeqId seq, int n) {
    plans_.erase(seq);  // a plan prepared again gives its unused pages back first
    Open& open = plans_[seq];
    open.step = SequenceStep{seq, nullptr, n};
    auto plan = kv_.prepare(std::span<const SequenceStep>(&open.step, 1));
    if (!plan.ok()) {
      plans_.erase(seq);
      return plan.status();
    }
    open.plan = std::move(plan).value();
    return Status::Ok();
  }
  void write(int layer, KvManager::SeqId seq, const float* k, const float* v, int n) {
    StepPlan& plan = plan_of(seq, n);
    const Status st = kv_.write(plan, 0, layer, k, v);
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  void attend(int layer, KvManager::SeqId seq, const float* q, int n, const AttentionParams& p, float* out,
              ThreadPool& threads) {
    StepPlan& plan = plan_of(seq, n);
    const Status st = kv_.select(plan, 0, layer, q, p.n_head, 0.f, threads);
    EXPECT_TRUE(st.ok()) << st.to_string();
    const Status ran = attention_paged(kv_.pool(), plan.seqs[0].layers[(size_t)layer].pages,
                                       kv_.config().layer_policies[(size_t)layer], p, q, out, threads);
    EXPECT_TRUE(ran.ok()) << ran.to_string();
  }
  // The plan of the last reserve() (its per-layer page lists), for inspection.
  const StepPlan& plan(KvManager::SeqId seq) { return plans_.at(seq).plan; }
  void commit(KvManager::SeqId seq, int n, const int32_t* ids = nullptr) {
    auto it = plans_.find(seq);
    ASSERT_TRUE(it != plans_.end()) << "commit without reserve";
    it->second.step.n = n;
    it->second.step.tokens = ids;
    const Status st = kv_.commit(it->second.plan);
    EXPECT_TRUE(st.ok()) << st.to_string();
    plans_.erase(it);
  }

 private:
  StepPlan& plan_of(KvManager::SeqId seq, int n) {
    auto it = plans_.find(seq);
    EXPECT_TRUE(it != plans_.end()) << "write or attend without reserve";
    EXPECT_EQ(it->second.step.n, n);
    return it->second.plan;
  }
  // A prepared step: the plan refers to its step, so both live in the map node.
  struct Open {
    SequenceStep step;
    StepPlan plan;
  };
  KvManager& kv_;
  std::map<KvManager::SeqId, Open> plans_;
};

inline std::unique_ptr<KvManager> make_cache(const Shape& s, std::vector<PolicySpec> pols,
                                           int64_t budget_tokens_per_layer = 1 << 14) {
  KvManagerConfig cfg;
  cfg.n_layer = (int)pols.size();
  cfg.n_kv_heads = s.n_kv;
  cfg.head_dim_k = s.hd;
  cfg.head_dim_v = s.hd;
  cfg.page_size = s.page;
  cfg.layer_policies = std::move(pols);
  cfg.budget_bytes = budget_tokens_per_layer * cfg.n_layer * s.n_kv * s.hd * 2 * 2;
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

// Feeds [n_tok] tokens in the given chunk sizes through layer 0 and returns
// the attention output [n_tok, n_head, hd].
inline std::vector<float> run_chunks(KvManager& kv, const Shape& s, const AttentionParams& p,
                                     const std::vector<float>& q, const std::vector<float>& k,
                                     const std::vector<float>& v, const std::vector<int>& chunks,
                                     ThreadPool& threads) {
  StepDriver cache(kv);
  auto seq = kv.add_sequence();
  EXPECT_TRUE(seq.ok());
  int64_t n_tok = 0;
  for (int c : chunks) n_tok += c;
  std::vector<float> out((size_t)n_tok * s.n_head * s.hd, NAN);
  const size_t kr = (size_t)s.n_kv * s.hd, qr = (size_t)s.n_head * s.hd;
  int64_t pos = 0;
  for (int c : chunks) {
    const Status st = cache.reserve(*seq, c);
    EXPECT_TRUE(st.ok()) << st.to_string();
    for (int l = 0; l < kv.config().n_layer; ++l) {
      cache.write(l, *seq, k.data() + pos * kr, v.data() + pos * kr, c);
      if (l == 0) cache.attend(0, *seq, q.data() + pos * qr, c, p, out.data() + pos * qr, threads);
    }
    cache.commit(*seq, c);
    pos += c;
  }
  EXPECT_EQ(kv.length(*seq), n_tok);
  kv.remove_sequence(*seq);
  return out;
}

inline std::vector<int> split_into(int n, std::vector<int> sizes) {
  std::vector<int> out;
  int left = n;
  for (size_t i = 0; left > 0; ++i) {
    const int c = std::min(left, sizes[i % sizes.size()]);
    out.push_back(c);
    left -= c;
  }
  return out;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    m = std::max(m, std::fabs(a[i] - b[i]));
  }
  return m;
}

// A KvManager of f32 pages (exact reads) with n_layer layers of one policy and room for n_pages pages.
inline std::unique_ptr<KvManager> make_f32_manager(const Shape& shape, int n_layer, const char* policy,
                                                   int32_t n_pages) {
  KvManagerConfig cfg;
  cfg.n_layer = n_layer;
  cfg.n_kv_heads = shape.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = shape.hd;
  cfg.page_size = shape.page;
  cfg.storage = KvStorage::F32;
  cfg.layer_policies.assign((size_t)n_layer, *parse_policy(policy));
  cfg.budget_bytes = (int64_t)n_pages * shape.page * shape.n_kv * 2 * shape.hd * 4;
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

}  // namespace stride::testing_util
