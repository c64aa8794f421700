// The second stage of estimate=rerank on int8 copies of the keys
// (rerank_keys=int8): the policy key; the int8 page log-sum-exp on every CPU
// path against its scalar reference, and that reference against the
// full-precision log-sum-exp within the quantization's error bound; the
// shortlist's scores against the pool's keys; and on pages whose score
// margins exceed the int8 error, the KvManager's picks against the
// full-precision two-stage selection written from its definition
// (topk_oracle.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention/page_logsumexp.h"
#include "attention/page_logsumexp_int8.h"
#include "attention/policy.h"
#include "attention/topk_rerank.h"
#include "core/cpu_features.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_key_codes.h"
#include "topk_check.h"

namespace stride {

using namespace testing_util;

TEST(RerankInt8, ParsesPrintsAndRefusesWithoutRerank) {
  auto p = parse_policy("topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->rerank_estimate && p->rerank_int8);
  auto sp = parse_policy("sparse_prefill:estimate=rerank,rerank_keys=int8");
  ASSERT_TRUE(sp.ok()) << sp.status().to_string();
  EXPECT_TRUE(sp->rerank_int8);
  auto pool_keys = parse_policy("topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=pool");
  ASSERT_TRUE(pool_keys.ok());
  EXPECT_FALSE(pool_keys->rerank_int8);
  EXPECT_EQ(policy_to_string(*pool_keys), "topk:sparsity=0.9,prefill=dense,estimate=rerank,shortlist=4")
      << "the default prints as before: trial logs keyed by it still match";
  for (const PolicySpec& spec : {*p, *sp}) {
    auto rt = parse_policy(policy_to_string(spec));
    ASSERT_TRUE(rt.ok()) << policy_to_string(spec);
    EXPECT_EQ(*rt, spec) << policy_to_string(spec);
  }
  for (const char* bad : {"topk:sparsity=0.9,prefill=dense,rerank_keys=int8",
                          "topk:sparsity=0.9,prefill=dense,estimate=oracle,rerank_keys=int8",
                          "topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=f16",
                          "topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys="})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

namespace {

constexpr int kHeads = 2;

// A pool of 3 pages of page_size keys for 2 kv heads; page 1 full of
// random keys (a spread of magnitudes per token), encoded.
struct CodedPage {
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<PageKeyCodes> codes;
};
CodedPage coded_page(KvStorage storage, int dim, int page_size, uint32_t seed) {
  KvPoolShape shape{kHeads, dim, 8, page_size};
  shape.storage = storage;
  CodedPage c{std::move(KvPool::create(shape, 3)).value(), nullptr};
  std::vector<float> k = random_vec((size_t)page_size * kHeads * dim, seed);
  for (size_t i = 0; i < k.size(); ++i) k[i] *= 0.5f + (float)(i / (size_t)dim % 4);
  const std::vector<float> v((size_t)page_size * kHeads * 8, 0.f);
  c.pool->store(1, 0, page_size, k.data(), (int64_t)kHeads * dim, v.data(), kHeads * 8, 0);
  c.codes = std::make_unique<PageKeyCodes>(3, kHeads, dim, page_size);
  c.codes->encode(*c.pool, 1);
  return c;
}

std::vector<const float*> row_ptrs(const std::vector<float>& q, int n_rows, int dim) {
  std::vector<const float*> rows;
  for (int r = 0; r < n_rows; ++r) rows.push_back(q.data() + (size_t)r * dim);
  return rows;
}

}  // namespace

// Every CPU path's kernel against the scalar reference over the same codes:
// head sizes of one and many 4-channel words, page sizes with and without
// padding keys, row counts below, at and above a tile.
TEST(RerankInt8, EveryCpuPathMatchesTheScalarReference) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  for (const int dim : {4, 64, 128, 20})
    for (const int page_size : {16, 32, 24, 40}) {
      const CodedPage c = coded_page(KvStorage::F16, dim, page_size, 7 + dim + page_size);
      const std::vector<float> q = random_vec((size_t)17 * dim, 3 + dim);
      const std::vector<const float*> rows = row_ptrs(q, 17, dim);
      for (const int n_rows : {1, 3, 7, 8, 9, 17}) {
        Int8Rows qr;
        qr.quantize(rows.data(), n_rows, dim);
        for (const int head : {0, 1}) {
          std::vector<float> want_top((size_t)n_rows), want_sum((size_t)n_rows),
              work((size_t)kInt8RowTile * c.codes->padded_page());
          page_logsumexp_int8_ref(*c.codes, 1, head, qr, 0.3f, nullptr, want_top.data(), want_sum.data());
          for (const CpuPath path : paths) {
            // Rows past n_rows must stay as they were: the kernel writes [n_rows] only.
            std::vector<float> got_top((size_t)n_rows + 1, -1.f), got_sum((size_t)n_rows + 1, -1.f);
            page_logsumexp_int8_for(path)(*c.codes, 1, head, qr, 0.3f, work.data(), got_top.data(), got_sum.data());
            EXPECT_EQ(got_top[(size_t)n_rows], -1.f);
            EXPECT_EQ(got_sum[(size_t)n_rows], -1.f);
            for (int r = 0; r < n_rows; ++r) {
              // The top is one logit, exact on every path (the integer dot, then the same two products).
              EXPECT_FLOAT_EQ(got_top[(size_t)r], want_top[(size_t)r]) << cpu_path_name(path) << " r=" << r;
              const float want = want_top[(size_t)r] + std::log(want_sum[(size_t)r]);
              const float got = got_top[(size_t)r] + std::log(got_sum[(size_t)r]);
              EXPECT_NEAR(got, want, 2e-5f * std::max(1.f, std::fabs(want)))
                  << cpu_path_name(path) << " dim=" << dim << " page=" << page_size << " rows=" << n_rows
                  << " r=" << r << " head=" << head;
            }
          }
        }
      }
    }
}

// The int8 log-sum-exp against the pool's full-precision one (page_logsumexp_ref):
// a log-sum-exp moves by at most the largest change of one logit, and a
// logit scale * q.k moves by at most scale * sum_c (|q_c| dk + |k_c| dq + dq dk)
// with dq, dk half of each row's step (max|x| / 254).
TEST(RerankInt8, ReferenceIsWithinTheQuantizationBoundOfFullPrecision) {
  for (const KvStorage storage : {KvStorage::F32, KvStorage::F16}) {
    const int dim = 64, page_size = 32;
    const CodedPage c = coded_page(storage, dim, page_size, 21);
    const std::vector<float> q = random_vec((size_t)7 * dim, 22);
    const std::vector<const float*> rows = row_ptrs(q, 7, dim);
    Int8Rows qr;
    qr.quantize(rows.data(), 7, dim);
    const float scale = 0.125f;
    for (const int head : {0, 1}) {
      std::vector<float> exact(7), coded(7), coded_sum(7);
      page_logsumexp_ref(*c.pool, 1, head, page_size, rows.data(), 7, scale, nullptr, exact.data());
      page_logsumexp_int8_ref(*c.codes, 1, head, qr, scale, nullptr, coded.data(), coded_sum.data());
      for (int r = 0; r < 7; ++r) coded[(size_t)r] += std::log(coded_sum[(size_t)r]);
      for (int r = 0; r < 7; ++r) {
        double qmax = 0, bound = 0;
        for (int ch = 0; ch < dim; ++ch) qmax = std::max(qmax, (double)std::fabs(q[(size_t)r * dim + ch]));
        for (int t = 0; t < page_size; ++t) {
          const double dk = c.codes->scales(1, head)[t] / 2, dq = qmax / 254;
          double e = 0;
          for (int ch = 0; ch < dim; ++ch) {
            const double kc = storage == KvStorage::F16 ? fp16_to_fp32(c.pool->k(1, head)[t * dim + ch])
                                                        : c.pool->k32(1, head)[t * dim + ch];
            e += std::fabs(q[(size_t)r * dim + ch]) * dk + std::fabs(kc) * dq + dq * dk;
          }
          bound = std::max(bound, scale * e);
        }
        EXPECT_LE(std::fabs(coded[(size_t)r] - exact[(size_t)r]), bound * 1.001 + 1e-5)
            << "storage=" << (int)storage << " head=" << head << " r=" << r;
        EXPECT_NE(coded[(size_t)r], exact[(size_t)r]) << "the int8 path must be what ran";
      }
    }
  }
}

// The shortlist's scores from the int8 copies: close to the pool's, and
// pages without a current copy (a partial page, a page written since) are
// scored from the pool exactly as without copies.
TEST(RerankInt8, GroupScoresUseCurrentCopiesOnly) {
  const int dim = 64, ps = 16, n_pages = 6;
  KvPoolShape shape{kHeads, dim, 8, ps};
  auto pool = std::move(KvPool::create(shape, n_pages)).value();
  const std::vector<float> k = random_vec((size_t)n_pages * ps * kHeads * dim, 31);
  const std::vector<float> v((size_t)ps * kHeads * 8, 0.f);
  PageKeyCodes codes(n_pages, kHeads, dim, ps);
  for (int p = 0; p < n_pages; ++p) {
    pool->store(p, 0, ps, k.data() + (size_t)p * ps * kHeads * dim, (int64_t)kHeads * dim, v.data(), kHeads * 8, p * ps);
    codes.encode(*pool, p);
  }
  const std::vector<int32_t> table = {0, 1, 2, 3, 4, 5};
  const std::vector<float> q = random_vec((size_t)3 * dim, 32);
  const std::vector<const float*> rows = row_ptrs(q, 3, dim);
  const std::vector<int64_t> shortlist = {1, 2, 3}, fixed = {0, 5};
  const int64_t kv_len = 5 * ps + 9;  // page 5 partial
  RerankScratch x;
  std::vector<float> plain(3), coded(3);
  rerank_group_scores(*pool, nullptr, table, 1, n_pages, kv_len, rows.data(), 3, 1, 0.125f, shortlist, fixed, x,
                      plain.data());
  rerank_group_scores(*pool, &codes, table, 1, n_pages, kv_len, rows.data(), 3, 1, 0.125f, shortlist, fixed, x,
                      coded.data());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(coded[(size_t)i], plain[(size_t)i], 0.02f * plain[(size_t)i] + 1e-4f) << i;
    EXPECT_NE(coded[(size_t)i], plain[(size_t)i]) << "the copies must be what ran";
  }
  // Pages 0-4 written since: every copy stale, the scores are the pool's.
  for (const int p : {0, 1, 2, 3, 4})
    pool->store(p, 0, ps, k.data() + (size_t)p * ps * kHeads * dim, (int64_t)kHeads * dim, v.data(), kHeads * 8,
                p * ps);
  rerank_group_scores(*pool, &codes, table, 1, n_pages, kv_len, rows.data(), 3, 1, 0.125f, shortlist, fixed, x,
                      coded.data());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(coded[(size_t)i], plain[(size_t)i]) << i;
}

// Groups of two pages scattered over the pool (the page table a
// permutation), shortlisted out of page order: each group's score is its
// share of the rows' softmax over the scored pages, as the scalar reference
// kernel's log-sum-exps give it in double, on every CPU path. The second
// stage reads the groups in page order; a page scored for the wrong group
// would move the shares far past the tolerance.
TEST(RerankInt8, GroupScoresOfScatteredGroupsMatchTheReference) {
  const int dim = 64, ps = 32, n_pages = 24, gp = 2, n_rows = 7;
  KvPoolShape shape{kHeads, dim, 8, ps};
  auto pool = std::move(KvPool::create(shape, n_pages)).value();
  PageKeyCodes codes(n_pages, kHeads, dim, ps);
  std::vector<int32_t> table((size_t)n_pages);  // logical -> physical
  for (int L = 0; L < n_pages; ++L) table[(size_t)L] = (L * 7 + 5) % n_pages;
  const std::vector<float> v((size_t)ps * kHeads * 8, 0.f);
  for (int L = 0; L < n_pages; ++L) {
    std::vector<float> k = random_vec((size_t)ps * kHeads * dim, 70 + (uint32_t)L);
    for (float& x : k) x *= 0.5f + 0.15f * (float)(L % 5);
    pool->store(table[(size_t)L], 0, ps, k.data(), (int64_t)kHeads * dim, v.data(), kHeads * 8, L * ps);
    codes.encode(*pool, table[(size_t)L]);
  }
  const std::vector<float> q = random_vec((size_t)n_rows * dim, 71);
  const std::vector<const float*> rows = row_ptrs(q, n_rows, dim);
  const std::vector<int64_t> shortlist = {9, 2, 6, 4, 10, 1, 7}, fixed = {0, 11};
  const float scale = 0.125f;
  const int head = 1;
  // Reference: each scored group's log-sum-exp per row, in double.
  Int8Rows quantized;
  quantized.quantize(rows.data(), n_rows, dim);
  std::vector<float> work((size_t)kInt8RowTile * codes.padded_page()), top(n_rows), sum(n_rows);
  std::vector<int64_t> scored = shortlist;
  scored.insert(scored.end(), fixed.begin(), fixed.end());
  std::vector<std::vector<double>> lse(scored.size(), std::vector<double>(n_rows, 0.0));  // [scored, rows] mass
  for (size_t i = 0; i < scored.size(); ++i)
    for (int64_t L = scored[i] * gp; L < (scored[i] + 1) * gp; ++L) {
      page_logsumexp_int8_ref(codes, table[(size_t)L], head, quantized, scale, work.data(), top.data(), sum.data());
      for (int r = 0; r < n_rows; ++r) lse[i][(size_t)r] += std::exp((double)top[(size_t)r]) * sum[(size_t)r];
    }
  std::vector<double> want(shortlist.size(), 0.0);
  for (int r = 0; r < n_rows; ++r) {
    double total = 0;
    for (size_t i = 0; i < scored.size(); ++i) total += lse[i][(size_t)r];
    for (size_t i = 0; i < shortlist.size(); ++i) want[i] += lse[i][(size_t)r] / total / n_rows;
  }
  for (const CpuPath path : supported_cpu_paths()) {
    ASSERT_TRUE(set_cpu_path(path).ok());
    RerankScratch x;
    std::vector<float> got(shortlist.size());
    rerank_group_scores(*pool, &codes, table, gp, n_pages, (int64_t)n_pages * ps, rows.data(), n_rows, head, scale,
                        shortlist, fixed, x, got.data());
    for (size_t i = 0; i < shortlist.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 2e-5 * want[i] + 1e-7) << cpu_path_name(path) << " group " << shortlist[i];
  }
  ASSERT_TRUE(set_cpu_path(supported_cpu_paths().back()).ok());
}

namespace {

// Inputs whose last query, on every kv head, ranks the candidate pages by
// exact score with gaps of 0.3 in logit between neighbours: each page's keys
// are a multiple of the question plus small noise, the multiples a
// permutation. The int8 error of a logit is near 0.01, far below the gaps.
Inputs margin_inputs(const Shape& s, int n, uint32_t seed) {
  Inputs in = random_inputs(s, n, seed);
  const int last = n - 1, group = s.n_head / s.n_kv, n_pages = n / s.page;
  for (float& x : in.k) x *= 0.05f;
  for (int h = 0; h < s.n_kv; ++h) {
    const float* u = &in.q[((size_t)last * s.n_head + h * group) * s.hd];
    for (int j = 1; j < group; ++j) std::copy(u, u + s.hd, &in.q[((size_t)last * s.n_head + h * group + j) * s.hd]);
    double norm2 = 0;
    for (int c = 0; c < s.hd; ++c) norm2 += (double)u[c] * u[c];
    for (int p = 0; p < n_pages; ++p) {
      // q.k = m |u|^2 = 0.3 rank sqrt(hd): a logit of 0.3 rank at scale 1 / sqrt(hd).
      const int rank = (p * 7 + 3 * h) % n_pages;
      const double m = 0.3 * rank * std::sqrt((double)s.hd) / norm2;
      for (int t = 0; t < s.page; ++t)
        for (int c = 0; c < s.hd; ++c) in.k[((size_t)(p * s.page + t) * s.n_kv + h) * s.hd + c] += (float)(m * u[c]);
    }
  }
  return in;
}

}  // namespace

// With margins above the int8 error, the KvManager's decode step with int8
// copies reads exactly the pages of the full-precision two-stage selection
// (topk_oracle.h scores the f16 keys in double), for several shortlists and
// budgets, on every CPU path.
TEST(RerankInt8, PicksMatchTheFullPrecisionRerankWhereMarginsExceedTheError) {
  const Shape s;
  const int n = 512;  // 32 pages of 16
  const std::vector<CpuPath> paths = supported_cpu_paths();
  for (const CpuPath path : paths) {
    SCOPED_TRACE(cpu_path_name(path));
    ASSERT_TRUE(set_cpu_path(path).ok());
    for (const uint32_t seed : {41u, 42u}) {
      const Inputs in = margin_inputs(s, n, seed);
      for (const char* policy : {"topk:sparsity=0.8,prefill=dense,estimate=rerank,rerank_keys=int8",
                                 "topk:sparsity=0.9,prefill=dense,estimate=rerank,shortlist=2,rerank_keys=int8",
                                 "topk:sparsity=0.7,sinks=20,window=40,prefill=dense,estimate=rerank,shortlist=3,"
                                 "rerank_keys=int8"})
        check_topk_inputs(policy, in.q, in.k, in.v, n, {n - 1, 1}, 2);
    }
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

// Over enough pages that the decode step's bounds are split over the pool's
// threads as well as the kv heads' second stages: the KvManager still reads
// exactly the pages of the full-precision two-stage selection, with the int8
// copies and with the pool's keys, and the Quest bound's selection without
// the second stage.
TEST(RerankInt8, PicksOverManyPagesMatchTheDefinitionOnThreads) {
  const Shape s;
  const int n = 2112;  // 132 pages of 16: 131 candidates, above two threads' share of bounds
  const Inputs in = margin_inputs(s, n, 43);
  for (const char* policy : {"topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8",
                             "topk:sparsity=0.9,prefill=dense,estimate=rerank", "topk:sparsity=0.9,prefill=dense"})
    for (const int threads : {2, 3})
      check_topk_inputs(policy, in.q, in.k, in.v, n, {n - 1, 1}, threads);
}

// Without constructed margins the int8 scores break some near-ties the
// other way: the KvManager's decode steps then read other pages than with
// the pool's keys (the copies are what it scored), as many of them.
TEST(RerankInt8, KvManagerScoresTheCopiesOnDecodeSteps) {
  const Shape s;
  const int n = 400, steps = 24;
  const Inputs in = random_inputs(s, n, 61);
  std::vector<int> chunks = {n - steps};
  chunks.resize((size_t)steps + 1, 1);
  auto run = [&](const char* policy) {
    ThreadPool threads(2);
    auto cache = make_cache(s, {*parse_policy(policy)});
    const std::vector<float> out = run_chunks(*cache, s, params_for(s), in.q, in.k, in.v, chunks, threads);
    return std::make_pair(out, cache->stats().pages_read);
  };
  const auto pool_keys = run("topk:sparsity=0.8,prefill=dense,estimate=rerank");
  const auto int8_keys = run("topk:sparsity=0.8,prefill=dense,estimate=rerank,rerank_keys=int8");
  EXPECT_EQ(int8_keys.second, pool_keys.second);
  EXPECT_GT(max_abs_diff(int8_keys.first, pool_keys.first), 1e-4f);
}

}  // namespace stride
