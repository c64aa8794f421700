// Attention sinks (gpt-oss): a per-head logit that joins the softmax
// denominator and has no value. The fused kernel, on every CPU path this
// machine runs, for decode (split into segments) and prefill, over dense,
// window, R-SWA and per-head top-k page lists, against a naive softmax over
// the visible scores with the sink logit appended, written here in plain
// scalar code. The scalar reference (attention_reference) is checked against
// the same naive softmax, and against the kernel for cache-relative R-SWA.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/attention_reference.h"
#include "attention/plan.h"
#include "attention/policy.h"
#include "../kv/cache_test_util.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kv/store/kv_pool.h"

namespace stride {
namespace {

using testing_util::random_vec;

constexpr int kNkv = 2, kNhead = 6, kPage = 32;
// One per query head: small, large (the sink takes most of the mass) and negative.
const float kSinks[kNhead] = {0.5f, -2.f, 3.f, 8.f, -0.3f, 1.2f};

// May query i (at q_pos0 + i) through kv head h see the key at position j?
using Visible = std::function<bool(int i, int h, int64_t j)>;

// out[i, hq] = sum_j softmax([s_0 .. s_n, sink_hq])_j v_j over visible keys j,
// s_j = q . k_j / sqrt(hd). In double, one loop per step.
std::vector<float> naive_with_sink(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, int n_q, int64_t kv_len, int hd,
                                   const Visible& visible) {
  const int group = kNhead / kNkv;
  std::vector<float> out((size_t)n_q * kNhead * hd, 0.f);
  for (int i = 0; i < n_q; ++i)
    for (int hq = 0; hq < kNhead; ++hq) {
      const int h = hq / group;
      std::vector<double> logits;
      std::vector<int64_t> keys;
      for (int64_t j = 0; j < kv_len; ++j) {
        if (!visible(i, h, j)) continue;
        double dot = 0;
        for (int t = 0; t < hd; ++t) dot += (double)q[((size_t)i * kNhead + hq) * hd + t] * k[((size_t)j * kNkv + h) * hd + t];
        logits.push_back(dot / std::sqrt((double)hd));
        keys.push_back(j);
      }
      if (keys.empty()) continue;
      logits.push_back(kSinks[hq]);
      double mx = -INFINITY;
      for (double l : logits) mx = std::max(mx, l);
      double denom = 0;
      for (double l : logits) denom += std::exp(l - mx);
      for (size_t n = 0; n < keys.size(); ++n) {
        const double w = std::exp(logits[n] - mx) / denom;
        for (int t = 0; t < hd; ++t)
          out[((size_t)i * kNhead + hq) * hd + t] += (float)(w * v[((size_t)keys[n] * kNkv + h) * hd + t]);
      }
    }
  return out;
}

// Keeps, for each block and kv head, the entries whose logical page passes
// `keep(h, page)`: per-head lists as top-k selection writes them.
AttentionPlan select_per_head(const AttentionPlan& dense, const std::function<bool(int, int64_t)>& keep) {
  AttentionPlan out = dense;
  out.n_kv_heads = kNkv;
  out.page_ids.clear();
  out.page_valid.clear();
  out.page_first.clear();
  out.page_full.clear();
  out.indptr = {0};
  out.head_indptr = {0};
  for (int b = 0; b < dense.n_blocks(); ++b) {
    for (int h = 0; h < kNkv; ++h) {
      for (int32_t e = dense.indptr[b]; e < dense.indptr[b + 1]; ++e) {
        if (!keep(h, dense.page_first[e] / kPage)) continue;
        out.page_ids.push_back(dense.page_ids[e]);
        out.page_valid.push_back(dense.page_valid[e]);
        out.page_first.push_back(dense.page_first[e]);
        out.page_full.push_back(dense.page_full[e]);
      }
      out.head_indptr.push_back((int32_t)out.page_ids.size());
    }
    out.indptr.push_back((int32_t)out.page_ids.size());
  }
  return out;
}

struct Case {
  const char* policy;
  KvStorage storage;
  int hd;
  int64_t kv_len;
  int n_q;            // the last n_q positions are the queries
  bool per_head_topk;  // kv head 0 reads even pages only, head 1 all but page 1
};

void check_case(const Case& c) {
  SCOPED_TRACE(std::string(c.policy) + " " + kv_storage_name(c.storage) + " hd=" + std::to_string(c.hd) +
               " kv=" + std::to_string(c.kv_len) + " n_q=" + std::to_string(c.n_q));
  auto pol = parse_policy(c.policy);
  ASSERT_TRUE(pol.ok());
  const int hd = c.hd;
  const int64_t row = (int64_t)kNkv * hd;
  auto k = random_vec(c.kv_len * row, 11);
  auto v = random_vec(c.kv_len * row, 12);
  const auto q = random_vec((size_t)c.n_q * kNhead * hd, 13);
  const int32_t n_pages = (int32_t)((c.kv_len + kPage - 1) / kPage);
  auto pool = KvPool::create({kNkv, hd, hd, kPage, c.storage}, n_pages);
  ASSERT_TRUE(pool.ok());
  std::vector<int32_t> table(n_pages);
  for (int32_t l = 0; l < n_pages; ++l) {
    table[l] = n_pages - 1 - l;  // scattered
    const int64_t first = (int64_t)l * kPage;
    const int n = (int)std::min<int64_t>(kPage, c.kv_len - first);
    (*pool)->store(table[l], 0, n, k.data() + first * row, row, v.data() + first * row, row, first);
  }
  if (c.storage == KvStorage::F16)  // what the pages hold
    for (auto* x : {&k, &v})
      for (float& e : *x) e = fp16_to_fp32(fp32_to_fp16(e));
  const int64_t q_pos0 = c.kv_len - c.n_q;
  AttentionPlan plan = plan_attention(*pol, table, kPage, c.kv_len, q_pos0, c.n_q, default_q_block(c.n_q));
  auto page_kept = [](int h, int64_t page) { return h == 0 ? page % 2 == 0 : page != 1; };
  if (c.per_head_topk) plan = select_per_head(plan, page_kept);
  plan.work = partition_work(plan, kPage, kNkv);
  AttentionParams p;
  p.n_head = kNhead;
  p.sink_logits = kSinks;

  const PolicySpec& policy = *pol;
  const std::vector<float> want =
      naive_with_sink(q, k, v, c.n_q, c.kv_len, hd, [&](int i, int h, int64_t j) {
        return policy_attends(policy, q_pos0 + i, j) && (!c.per_head_topk || page_kept(h, j / kPage));
      });
  const std::vector<CpuPath> paths = supported_cpu_paths();
  for (const CpuPath path : paths)
    for (bool split : {false, true}) {
      SCOPED_TRACE(std::string(cpu_path_name(path)) + (split ? " split" : " per item"));
      ASSERT_TRUE(set_cpu_path(path).ok());
      AttentionPlan run = plan;
      run.work.split = split;
      ThreadPool threads(2);
      std::vector<float> got(want.size(), -1.f);
      const Status ran = attention_paged(**pool, run, *pol, p, q.data(), got.data(), threads);
      ASSERT_TRUE(ran.ok()) << ran.to_string();
      float worst = 0.f;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
      EXPECT_LT(worst, 2e-5f);
    }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

const KvStorage kStorages[] = {KvStorage::F32, KvStorage::F16};
const char* kPolicies[] = {"dense", "window:size=100", "rswa:sinks=4,window=150,pos=abs"};

TEST(AttentionSinks, DecodeMatchesNaiveSoftmaxWithSinkOnEveryPath) {
  for (KvStorage st : kStorages)
    for (const char* pol : kPolicies) {
      check_case({pol, st, 64, 700, 1, false});
      check_case({pol, st, 20, 700, 1, false});
    }
  check_case({"topk:sparsity=0.5", KvStorage::F16, 64, 700, 1, true});
}

TEST(AttentionSinks, PrefillMatchesNaiveSoftmaxWithSinkOnEveryPath) {
  for (KvStorage st : kStorages)
    for (const char* pol : kPolicies) check_case({pol, st, 64, 300, 45, false});
  check_case({"dense", KvStorage::F32, 44, 1000, 45, false});
  check_case({"topk:sparsity=0.5", KvStorage::F32, 64, 300, 45, true});
}

// The scalar reference with sinks: the same naive softmax, and for
// cache-relative R-SWA (sink keys seen through a shifted query) the kernel.
TEST(AttentionSinks, ReferenceMatchesNaiveAndKernel) {
  constexpr int hd = 32, n_q = 5;
  constexpr int64_t kv_len = 260;
  const int64_t row = (int64_t)kNkv * hd;
  const auto k = random_vec(kv_len * row, 21), v = random_vec(kv_len * row, 22);
  const auto q = random_vec((size_t)n_q * kNhead * hd, 23);
  const RopeTable rope = RopeTable::plain(10000.0, hd, 1.0, false);
  AttentionParams p;
  p.n_head = kNhead;
  p.rope = &rope;
  p.sink_logits = kSinks;
  const int64_t q_pos0 = kv_len - n_q;
  std::vector<float> got((size_t)n_q * kNhead * hd);
  auto window = parse_policy("window:size=64");
  ASSERT_TRUE(window.ok());
  attention_reference(*window, p, kNkv, hd, hd, q.data(), n_q, q_pos0, k.data(), v.data(), kv_len, got.data());
  const auto want = naive_with_sink(q, k, v, n_q, kv_len, hd, [&](int i, int, int64_t j) {
    return policy_attends(*window, q_pos0 + i, j);
  });
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;

  // The masked reference (top-k's) with no visible key at all: zeros, the sink alone has no value.
  std::vector<float> none(got.size(), -1.f);
  attention_reference_masked(p, kNkv, hd, hd, q.data(), n_q, k.data(), v.data(), kv_len,
                             [](int, int, int64_t) { return false; }, none.data());
  for (float x : none) EXPECT_EQ(x, 0.f);

  auto rel = parse_policy("rswa:sinks=4,window=64,pos=rel");
  ASSERT_TRUE(rel.ok());
  auto pool = KvPool::create({kNkv, hd, hd, kPage, KvStorage::F32}, (kv_len + kPage - 1) / kPage);
  ASSERT_TRUE(pool.ok());
  std::vector<int32_t> table;
  for (int64_t first = 0; first < kv_len; first += kPage) {
    table.push_back((int32_t)table.size());
    const int n = (int)std::min<int64_t>(kPage, kv_len - first);
    (*pool)->store(table.back(), 0, n, k.data() + first * row, row, v.data() + first * row, row, first);
  }
  AttentionPlan plan = plan_attention(*rel, table, kPage, kv_len, q_pos0, n_q, default_q_block(n_q));
  plan.work = partition_work(plan, kPage, kNkv);
  ThreadPool threads(1);
  std::vector<float> kernel(got.size());
  ASSERT_TRUE(attention_paged(**pool, plan, *rel, p, q.data(), kernel.data(), threads).ok());
  attention_reference(*rel, p, kNkv, hd, hd, q.data(), n_q, q_pos0, k.data(), v.data(), kv_len, got.data());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(kernel[i], got[i], 2e-5f) << i;
}

}  // namespace
}  // namespace stride
