// Per-head top-k budgets: the split of the pooled picks against hand-worked
// values of its rule (proportional to the shares, capped at the candidates,
// largest remainder, the rest to streaming heads), the retrieval cut from a
// made-up profile, and select_topk under a profile against plain top-k: the
// same total read, streaming heads on sinks + window only.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "attention/head_budget.h"
#include "attention/policy.h"
#include "attention/topk_selector.h"
#include "kv/store/page_summary.h"

namespace stride {
namespace {

TEST(HeadBudget, SplitIsProportionalToTheShares) {
  // Three entries pool 3 x 4 = 12 picks in the ratio 0 : 3 : 1; the first takes no part.
  EXPECT_EQ(split_head_picks({-1, 0, 3, 1}, 4, 100), (std::vector<int64_t>{4, 0, 9, 3}));
}

TEST(HeadBudget, CappedEntriesPassTheirExcessOn) {
  // 9 > cap 8: the weight-1 entry takes the other 4.
  EXPECT_EQ(split_head_picks({-1, 0, 3, 1}, 4, 8), (std::vector<int64_t>{4, 0, 8, 4}));
  // Both retrieval entries capped at 5; the 2 left go to the streaming entry.
  EXPECT_EQ(split_head_picks({-1, 0, 3, 1}, 4, 5), (std::vector<int64_t>{4, 2, 5, 5}));
}

TEST(HeadBudget, RemaindersGoToTheLargestFractionThenTheLowerIndex) {
  // 4 picks over three equal shares: 4/3 each, the one left to the first.
  EXPECT_EQ(split_head_picks({1, 1, 1, 0}, 1, 10), (std::vector<int64_t>{2, 1, 1, 0}));
  // 10 picks in the ratio 1 : 2 : 2: 2, 4, 4 exactly.
  EXPECT_EQ(split_head_picks({1, 2, 2, 0, 0}, 2, 10), (std::vector<int64_t>{2, 4, 4, 0, 0}));
  // 6 in the ratio 0.5 : 0.25 : 0.25 -> 3, 1.5, 1.5: the half goes to index 1.
  EXPECT_EQ(split_head_picks({0.5, 0.25, 0.25}, 2, 10), (std::vector<int64_t>{3, 2, 1}));
}

TEST(HeadBudget, NoRetrievalHeadIsPlainTopk) {
  EXPECT_EQ(split_head_picks({0, 0, 0}, 3, 10), (std::vector<int64_t>{3, 3, 3}));
}

TEST(HeadBudget, TotalIsKeptAndNoEntryExceedsItsCandidates) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> share(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> shares(48);
    for (double& s : shares) s = trial % 3 == 0 && share(rng) < 0.5 ? 0.0 : share(rng);
    const int64_t cap = 1 + trial % 40, picks = trial % (cap + 1);
    const std::vector<int64_t> out = split_head_picks(shares, picks, cap);
    EXPECT_EQ(std::accumulate(out.begin(), out.end(), int64_t{0}), picks * 48) << trial;
    for (const int64_t n : out) EXPECT_TRUE(n >= 0 && n <= cap) << trial;
  }
}

TEST(HeadBudget, RetrievalHeadsAreTheMostDistant) {
  // A made-up profile of 2 layers x 2 kv heads; layer 1 is not top-k in the second case.
  const std::vector<double> mass = {0.10, 0.50, 0.30, 0.05};
  EXPECT_EQ(head_shares_from_mass(mass, {1, 1, 1, 1}, 0.5), (std::vector<double>{0, 0.50, 0.30, 0}));
  EXPECT_EQ(head_shares_from_mass(mass, {1, 1, 0, 0}, 0.5), (std::vector<double>{0, 0.50, -1, -1}));
  EXPECT_EQ(head_shares_from_mass(mass, {1, 1, 1, 1}, 1.0), mass);
  // ceil(0.3 x 4) = 2 retrieval heads; a retrieval head with no distant mass keeps a tiny share.
  EXPECT_EQ(head_shares_from_mass({0, 0, 0.2, 0}, {1, 1, 1, 1}, 0.3), (std::vector<double>{1e-6, 0, 0.2, 0}));
}

TEST(HeadBudget, PolicyNamesTheProfile) {
  const auto p = parse_policy("topk:sparsity=0.9,prefill=dense,estimate=rerank,heads=/m/q.heads.json");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->heads_file, "/m/q.heads.json");
  EXPECT_EQ(p->retrieval, 0.5);
  const auto again = parse_policy(policy_to_string(*p));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *p);
  EXPECT_FALSE(parse_policy("topk:sparsity=0.9,retrieval=0.3").ok());             // no profile
  EXPECT_FALSE(parse_policy("topk:mass=0.9,heads=x.json").ok());                  // adaptive budget
  EXPECT_FALSE(parse_policy("topk:sparsity=0.9,heads=x.json,retrieval=0").ok());  // no retrieval head
  EXPECT_FALSE(parse_policy("topk:sparsity=0.9,heads=x.json,retrieval=1.5").ok());
  const auto all = parse_policy("topk:sparsity=0.9,heads=x.json,retrieval=1");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->retrieval, 1.0);
  EXPECT_EQ(*parse_policy(policy_to_string(*all)), *all);
}

// One decode query over random keys: plain top-k and the same under shares
// for 2 layers x 2 kv heads ({0, 1} for this layer, {0.5, 0.5} for the other).
TEST(HeadBudget, SelectionReadsWhatPlainTopkReadsInAll) {
  const int n_head = 4, n_kv = 2, dim = 8, ps = 4;
  const int64_t kv_len = 256, n_pages = kv_len / ps;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> val(-6, 6);
  PageSummaries sums((int32_t)n_pages, n_kv, dim);
  std::vector<float> k((size_t)ps * n_kv * dim);
  for (int32_t page = 0; page < n_pages; ++page) {
    for (float& x : k) x = (float)val(rng);
    sums.update(page, 0, ps, k.data(), (int64_t)n_kv * dim);
  }
  std::vector<int32_t> table(n_pages);
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> q((size_t)n_head * dim);
  for (float& x : q) x = (float)val(rng);

  PolicySpec plain = *parse_policy("topk:sparsity=0.9,prefill=dense");
  PolicySpec shared = plain;
  shared.head_shares = {0.0, 1.0, 0.5, 0.5};
  const auto select = [&](const PolicySpec& p, int layer) {
    PolicySpec at = p;
    at.head_layer = layer;
    return select_topk(at, table, ps, kv_len, kv_len - 1, 1, 1, sums, q.data(), n_head, n_kv);
  };
  const auto pages_of = [](const TopkSelection& s, int h) {
    return std::vector<int64_t>(s.pages.begin() + s.head_indptr[h], s.pages.begin() + s.head_indptr[h + 1]);
  };
  // 64 pages: keep ceil(0.1 x 64) = 7 of which 2 fixed (first page, the query's page): 5 picks a head.
  const TopkSelection p0 = select(plain, 0);
  ASSERT_EQ(p0.pages.size(), 14u);
  const TopkSelection s0 = select(shared, 0), s1 = select(shared, 1);
  // Pool of 4 x 5 = 20 picks in the ratio 0 : 1 : 0.5 : 0.5 -> 0, 10, 5, 5.
  EXPECT_EQ(pages_of(s0, 0), (std::vector<int64_t>{0, n_pages - 1}));
  EXPECT_EQ(pages_of(s0, 1).size(), 12u);
  EXPECT_EQ(pages_of(s1, 0).size(), 7u);
  EXPECT_EQ(pages_of(s1, 1).size(), 7u);
  EXPECT_EQ(s0.pages.size() + s1.pages.size(), 2 * p0.pages.size());
  // More picks extend the same ranking: the retrieval head reads plain top-k's pages and more.
  const std::vector<int64_t> plain_h1 = pages_of(p0, 1), more = pages_of(s0, 1);
  EXPECT_TRUE(std::includes(more.begin(), more.end(), plain_h1.begin(), plain_h1.end()));
}

}  // namespace
}  // namespace stride
