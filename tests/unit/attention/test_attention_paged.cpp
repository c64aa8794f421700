// attention_paged straight on a KvPool, for every storage type (f32, f16,
// int8): against the scalar reference on the K/V the pages hold (f16-rounded,
// int8 quantized and mapped back), and bit for bit across pool sizes, on
// decode (split into segment work items) and on a prefill chunk (one item
// per block and head). The work partition is a rule of the plan, so the
// thread count can change neither the partition nor a bit of the output.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/attention_reference.h"
#include "attention/plan.h"
#include "attention/policy.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kv/store/kv_pool.h"

namespace stride {

namespace {

constexpr int kNkv = 2, kNhead = 6, kPage = 32;

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  return x;
}

// What a page of this storage holds for rows of `dim` values.
std::vector<float> as_stored(std::vector<float> x, int dim, KvStorage storage) {
  if (storage == KvStorage::F16)
    for (float& v : x) v = fp16_to_fp32(fp32_to_fp16(v));
  if (storage == KvStorage::Int8) {
    std::vector<int8_t> q(dim);
    for (size_t r = 0; r < x.size(); r += dim) {
      const float scale = quantize_row_int8(x.data() + r, dim, q.data());
      for (int i = 0; i < dim; ++i) x[r + i] = q[i] * scale;
    }
  }
  return x;
}

struct Case {
  const char* policy;
  KvStorage storage;
  int hd;
  int64_t kv_len;
  int n_q;  // the last n_q positions are the queries
};

std::string name(const Case& c) {
  return std::string(c.policy) + " " + kv_storage_name(c.storage) + " hd=" + std::to_string(c.hd) +
         " kv=" + std::to_string(c.kv_len) + " n_q=" + std::to_string(c.n_q);
}

void check_case(const Case& c) {
  SCOPED_TRACE(name(c));
  auto pol = parse_policy(c.policy);
  ASSERT_TRUE(pol.ok());
  const int hd = c.hd;
  const int64_t row = (int64_t)kNkv * hd;
  const auto k = random_vec(c.kv_len * row, 1);  // [kv_len, n_kv, hd]
  const auto v = random_vec(c.kv_len * row, 2);  // [kv_len, n_kv, hd]
  const auto q = random_vec((size_t)c.n_q * kNhead * hd, 3);  // [n_q, n_head, hd]
  const int32_t n_pages = (int32_t)((c.kv_len + kPage - 1) / kPage);
  auto pool = KvPool::create({kNkv, hd, hd, kPage, c.storage}, n_pages);
  ASSERT_TRUE(pool.ok());
  // Logical page L in physical page n_pages - 1 - L: the pool is scattered.
  std::vector<int32_t> table(n_pages);
  for (int32_t l = 0; l < n_pages; ++l) {
    table[l] = n_pages - 1 - l;
    const int64_t first = (int64_t)l * kPage;
    const int n = (int)std::min<int64_t>(kPage, c.kv_len - first);
    (*pool)->store(table[l], 0, n, k.data() + first * row, row, v.data() + first * row, row, first);
  }
  const int64_t q_pos0 = c.kv_len - c.n_q;
  AttentionPlan plan = plan_attention(*pol, table, kPage, c.kv_len, q_pos0, c.n_q, default_q_block(c.n_q));
  plan.work = partition_work(plan, kPage, kNkv);
  const RopeTable rope = RopeTable::plain(10000.0, hd, 1.0, false);
  AttentionParams p;
  p.n_head = kNhead;
  p.rope = &rope;

  std::vector<float> want((size_t)c.n_q * kNhead * hd);
  attention_reference(*pol, p, kNkv, hd, hd, q.data(), c.n_q, q_pos0,
                      as_stored(k, hd, c.storage).data(), as_stored(v, hd, c.storage).data(),
                      c.kv_len, want.data());
  std::vector<float> first;
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool_threads(threads);
    std::vector<float> got(want.size(), -1.f);
    const Status ran = attention_paged(**pool, plan, *pol, p, q.data(), got.data(), pool_threads);
    ASSERT_TRUE(ran.ok()) << ran.to_string();
    float worst = 0.f;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    EXPECT_LT(worst, 2e-5f) << "threads=" << threads;
    if (first.empty()) {
      first = got;
    } else {
      EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)), 0)
          << "threads=" << threads << " differs from threads=1";
    }
  }
  // Every kernel path this CPU runs (the variants of isa/attention_kernel.cpp): the same bits.
  const std::vector<CpuPath> paths = supported_cpu_paths();
  for (const CpuPath path : paths) {
    ASSERT_TRUE(set_cpu_path(path).ok());
    ThreadPool two(2);
    std::vector<float> got(want.size(), -1.f);
    ASSERT_TRUE(attention_paged(**pool, plan, *pol, p, q.data(), got.data(), two).ok());
    EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)), 0)
        << cpu_path_name(path) << " path differs";
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
  // Split into segments or one item per (block, head): the same bits.
  AttentionPlan other = plan;
  other.work.split = !plan.work.split;
  ThreadPool two(2);
  std::vector<float> got(want.size(), -1.f);
  ASSERT_TRUE(attention_paged(**pool, other, *pol, p, q.data(), got.data(), two).ok());
  EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)), 0)
      << "split=" << other.work.split << " differs";
}

const KvStorage kStorages[] = {KvStorage::F32, KvStorage::F16, KvStorage::Int8};
const char* kPolicies[] = {"dense", "rswa:sinks=4,window=300,pos=rel"};

}  // namespace

// One query at depth 700: few (block, head) items, so each row's segments
// are the work items, folded in order.
TEST(AttentionPaged, DecodeMatchesReferenceForAnyPoolSize) {
  for (KvStorage st : kStorages)
    for (const char* pol : kPolicies) {
      check_case({pol, st, 64, 700, 1});
      check_case({pol, st, 20, 700, 1});  // head size with vector tails
    }
}

// A prefill chunk: one item per (block, head), rows in fours, pairs and singles.
TEST(AttentionPaged, PrefillChunkMatchesReferenceForAnyPoolSize) {
  for (KvStorage st : kStorages)
    for (const char* pol : kPolicies) {
      check_case({pol, st, 64, 300, 45});
      check_case({pol, st, 44, 300, 45});
    }
  // Deep enough that a chunk's few (block, head) items are split by segment.
  for (KvStorage st : kStorages) check_case({"dense", st, 64, 1000, 45});
}

}  // namespace stride

namespace stride {
namespace {

// A plan that names a page outside the pool, lists that do not fit their
// blocks, or heads that do not divide are errors before any page is read.
TEST(AttentionPaged, MalformedPlansAreErrorsNotReads) {
  constexpr int hd = 16, n_pages = 4;
  auto pool = KvPool::create({kNkv, hd, hd, kPage, KvStorage::F16}, n_pages);
  ASSERT_TRUE(pool.ok());
  const std::vector<int32_t> table = {0, 1, 2, 3};
  const PolicySpec dense{};
  AttentionPlan good = plan_attention(dense, table, kPage, 100, 99, 1, 1);
  good.work = partition_work(good, kPage, kNkv);
  const std::vector<float> q((size_t)kNhead * hd, 0.5f);
  std::vector<float> out(q.size());
  ThreadPool threads(1);
  AttentionParams p;
  p.n_head = kNhead;
  ASSERT_TRUE(attention_paged(**pool, good, dense, p, q.data(), out.data(), threads).ok());

  AttentionPlan bad = good;
  bad.page_ids[0] = n_pages;  // one past the pool
  EXPECT_EQ(attention_paged(**pool, bad, dense, p, q.data(), out.data(), threads).code(), StatusCode::kInternal);
  bad = good;
  bad.page_valid[0] = kPage + 1;
  EXPECT_EQ(attention_paged(**pool, bad, dense, p, q.data(), out.data(), threads).code(), StatusCode::kInternal);
  bad = good;
  bad.indptr.back() += 1;  // more entries than the arrays hold
  EXPECT_EQ(attention_paged(**pool, bad, dense, p, q.data(), out.data(), threads).code(), StatusCode::kInternal);
  bad = good;
  bad.n_kv_heads = kNkv;
  bad.head_indptr = {0, 1, (int32_t)good.n_entries() + 1};  // the last head's list leaves the block
  EXPECT_EQ(attention_paged(**pool, bad, dense, p, q.data(), out.data(), threads).code(), StatusCode::kInternal);
  bad = good;
  bad.work = WorkPartition{};  // the planner set no work partition
  EXPECT_EQ(attention_paged(**pool, bad, dense, p, q.data(), out.data(), threads).code(), StatusCode::kInternal);
  bad = good;
  bad.work.segment_end.back() += 1;  // a segment past its pair's entries
  EXPECT_EQ(attention_paged(**pool, bad, dense, p, q.data(), out.data(), threads).code(), StatusCode::kInternal);
  AttentionParams odd = p;
  odd.n_head = kNkv * 2 + 1;
  EXPECT_EQ(attention_paged(**pool, good, dense, odd, q.data(), out.data(), threads).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stride
