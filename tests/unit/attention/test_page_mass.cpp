// Exact attention mass per page (attention/page_mass.h) against softmax
// worked by hand and a long-double reference, and the keys it reads from a
// KV pool against the keys stored.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attention/page_mass.h"
#include "eval/needle_trace.h"

namespace stride {
namespace {

TEST(PageMass, MatchesSoftmaxWorkedByHand) {
  // dim 2, page size 2: keys (0,0) (1,0) | (0,1) (2,0); queries (1,0) and (0,1), scale 1.
  const float keys[] = {0, 0, 1, 0, 0, 1, 2, 0};
  const float q0[] = {1, 0}, q1[] = {0, 1};
  const float* rows[] = {q0, q1};
  const std::vector<double> mass = exact_page_mass(rows, 2, 2, 1.f, keys, 4, 2);
  const double e = std::exp(1.0), e2 = std::exp(2.0);
  const double t0 = 2 + e + e2, t1 = 3 + e;  // each query's softmax denominator
  ASSERT_EQ(mass.size(), 2u);
  EXPECT_NEAR(mass[0], ((1 + e) / t0 + 2 / t1) / 2, 1e-12);
  EXPECT_NEAR(mass[1], ((1 + e2) / t0 + (e + 1) / t1) / 2, 1e-12);
}

TEST(PageMass, MatchesLongDoubleReferenceWithPartialLastPage) {
  const int dim = 8, n_rows = 3, page = 4;
  const int64_t n_keys = 23;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.5f);
  std::vector<float> keys((size_t)n_keys * dim), q((size_t)n_rows * dim);
  for (float& x : keys) x = nd(rng);
  for (float& x : q) x = nd(rng);
  const float* rows[] = {q.data(), q.data() + dim, q.data() + 2 * dim};
  const float scale = 0.35f;
  const std::vector<double> mass = exact_page_mass(rows, n_rows, dim, scale, keys.data(), n_keys, page);
  ASSERT_EQ(mass.size(), 6u);
  std::vector<long double> want(6, 0);
  for (int r = 0; r < n_rows; ++r) {
    std::vector<long double> w((size_t)n_keys);
    long double total = 0;
    for (int64_t i = 0; i < n_keys; ++i) {
      long double dot = 0;
      for (int t = 0; t < dim; ++t) dot += (long double)rows[r][t] * keys[(size_t)(i * dim + t)];
      total += w[(size_t)i] = std::exp((long double)scale * dot);
    }
    for (int64_t i = 0; i < n_keys; ++i) want[(size_t)(i / page)] += w[(size_t)i] / total / n_rows;
  }
  double sum = 0;
  for (size_t p = 0; p < mass.size(); ++p) {
    EXPECT_NEAR(mass[p], (double)want[p], 1e-12) << "page " << p;
    sum += mass[p];
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

class GatherKeys : public ::testing::TestWithParam<KvStorage> {};

TEST_P(GatherKeys, ReadsStoredKeysThroughThePageTable) {
  const int n_kv = 2, dim = 4, page = 3;
  const int64_t n_keys = 8;  // pages 0..2, the last one partial
  auto pool = KvPool::create({n_kv, dim, dim, page, GetParam()}, 5);
  ASSERT_TRUE(pool.ok());
  const std::vector<int32_t> table = {3, 0, 4};  // logical -> physical
  std::vector<float> k((size_t)n_keys * n_kv * dim), v(k.size(), 0.f);
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.25f * (float)((int)(i * 7 % 19) - 9);
  for (int64_t L = 0; L < 3; ++L) {
    const int n = (int)std::min<int64_t>(page, n_keys - L * page);
    (*pool)->store(table[(size_t)L], 0, n, k.data() + L * page * n_kv * dim, n_kv * dim,
                   v.data() + L * page * n_kv * dim, n_kv * dim, L * page);
  }
  for (int h = 0; h < n_kv; ++h) {
    const std::vector<float> got = gather_head_keys(**pool, table, n_keys, h);
    ASSERT_EQ(got.size(), (size_t)n_keys * dim);
    for (int64_t i = 0; i < n_keys; ++i)
      for (int t = 0; t < dim; ++t) {
        const float want = k[(size_t)((i * n_kv + h) * dim + t)];
        // f16 holds these quarters exactly; int8 within half a step of max|x| / 127.
        const float tol = GetParam() == KvStorage::Int8 ? 2.25f / 127.f / 2.f + 1e-6f : 0.f;
        EXPECT_NEAR(got[(size_t)(i * dim + t)], want, tol) << "key " << i << " head " << h;
      }
  }
  std::vector<int64_t> absent;
  (void)gather_head_keys(**pool, {3, -1, 4}, n_keys, 0, &absent);
  EXPECT_EQ(absent, std::vector<int64_t>{1});
}

INSTANTIATE_TEST_SUITE_P(Storage, GatherKeys, ::testing::Values(KvStorage::F32, KvStorage::F16, KvStorage::Int8));

TEST(NeedleTraceHead, RanksCandidatesAndBlamesEstimateOrBudget) {
  // Pages 0 (sink) and 5 (window) fixed; candidates 1..4; the selector read page 3 only (budget 1).
  const std::vector<uint8_t> fixed = {1, 0, 0, 0, 0, 1}, selected = {1, 0, 0, 1, 0, 1};
  const std::vector<float> estimate = {9, 1, 2, 5, 3, 9};
  const std::vector<double> mass = {0.3, 0.05, 0.4, 0.1, 0.05, 0.1};
  // Needle A on page 2 (exact best, estimate third): the estimate's miss.
  // Needle B on page 4 (exact last of four): outside the budget of 1.
  const std::vector<NeedleSpan> needles = {{64, 80, true}, {130, 140, true}, {96, 100, false}};
  const HeadTrace h = trace_head(4, 1, selected, fixed, estimate, mass, needles, 32);
  EXPECT_EQ(h.pages, 6);
  EXPECT_EQ(h.candidates, 4);
  EXPECT_EQ(h.budget, 1);
  EXPECT_NEAR(h.selected_mass, 0.3 + 0.1 + 0.1, 1e-12);
  EXPECT_NEAR(h.oracle_mass, 0.3 + 0.1 + 0.4, 1e-12);
  ASSERT_EQ(h.needle_pages.size(), 3u);
  EXPECT_EQ(h.needle_pages[0].page, 2);
  EXPECT_EQ(h.needle_pages[0].rank_estimate, 2);  // after pages 3 (5) and 4 (3)
  EXPECT_EQ(h.needle_pages[0].rank_exact, 0);
  EXPECT_FALSE(h.needle_pages[0].selected);
  EXPECT_EQ(h.needle_pages[1].page, 4);
  EXPECT_EQ(h.needle_pages[1].rank_estimate, 1);
  EXPECT_EQ(h.needle_pages[1].rank_exact, 3);  // tied with page 1, which goes first
  EXPECT_EQ(h.needle_pages[2].page, 3);
  EXPECT_TRUE(h.needle_pages[2].selected);
  EXPECT_EQ(h.needle_pages[2].rank_estimate, 0);
  // Outcomes only for asked needles.
  ASSERT_EQ(h.outcomes.size(), 2u);
  EXPECT_EQ(h.outcomes[0], NeedleOutcome::EstimateMiss);
  EXPECT_EQ(h.outcomes[1], NeedleOutcome::BudgetMiss);
}

}  // namespace
}  // namespace stride
