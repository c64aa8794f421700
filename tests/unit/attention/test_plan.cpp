#include "attention/plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace stride {

namespace {

std::vector<PolicySpec> policies() {
  std::vector<PolicySpec> out;
  out.push_back(PolicySpec{});
  for (int64_t w : {1, 5, 16, 40}) {
    PolicySpec p;
    p.kind = PolicyKind::Window;
    p.window = w;
    out.push_back(p);
    for (int64_t s : {1, 3, 20}) {
      PolicySpec r;
      r.kind = PolicyKind::RSWA;
      r.window = w;
      r.sinks = s;
      out.push_back(r);
    }
  }
  return out;
}

bool brute_any(const PolicySpec& p, int64_t qa, int64_t qb, int64_t ka, int64_t kb) {
  for (int64_t q = qa; q <= qb; ++q)
    for (int64_t k = ka; k <= kb; ++k)
      if (policy_attends(p, q, k)) return true;
  return false;
}

bool brute_all(const PolicySpec& p, int64_t qa, int64_t qb, int64_t ka, int64_t kb) {
  for (int64_t q = qa; q <= qb; ++q)
    for (int64_t k = ka; k <= kb; ++k)
      if (!policy_attends(p, q, k)) return false;
  return true;
}

}  // namespace

TEST(Plan, VisibilityHelpersAreExactConsequencesOfThePredicate) {
  std::mt19937 rng(7);
  for (const PolicySpec& p : policies()) {
    for (int it = 0; it < 3000; ++it) {
      const int64_t qa = rng() % 120, qb = qa + rng() % 20;
      const int64_t ka = rng() % 130, kb = ka + rng() % 20;
      ASSERT_EQ(policy_any_visible(p, qa, qb, ka, kb), brute_any(p, qa, qb, ka, kb))
          << policy_to_string(p) << " q[" << qa << "," << qb << "] k[" << ka << "," << kb << "]";
      ASSERT_EQ(policy_all_visible(p, qa, qb, ka, kb), brute_all(p, qa, qb, ka, kb))
          << policy_to_string(p) << " q[" << qa << "," << qb << "] k[" << ka << "," << kb << "]";
    }
  }
}

// Every listed page holds a visible key, every page with a visible key is
// listed, in ascending order, and the full flag is exact.
TEST(Plan, ListsExactlyThePagesWithVisibleKeys) {
  const int ps = 8;
  for (const PolicySpec& p : policies()) {
    for (int64_t kv_len : {1, 7, 8, 9, 50, 131}) {
      const int64_t n_pages = (kv_len + ps - 1) / ps;
      std::vector<int32_t> table(n_pages);
      for (int64_t i = 0; i < n_pages; ++i) table[i] = (int32_t)(1000 + i);
      for (int n_q : {1, 5, 33}) {
        if (n_q > kv_len) continue;
        const int64_t q0 = kv_len - n_q;
        for (int qblk : {1, 4, 32}) {
          const AttentionPlan plan = plan_attention(p, table, ps, kv_len, q0, n_q, qblk);
          ASSERT_EQ(plan.n_blocks(), (n_q + qblk - 1) / qblk);
          ASSERT_TRUE(check_plan(plan, p, ps, kv_len).ok());
          for (int b = 0; b < plan.n_blocks(); ++b) {
            const int64_t qa = q0 + (int64_t)b * qblk;
            const int64_t qb = std::min<int64_t>(qa + qblk, q0 + n_q) - 1;
            std::vector<int64_t> listed;
            for (int32_t e = plan.indptr[b]; e < plan.indptr[b + 1]; ++e) {
              const int64_t L = plan.page_first[e] / ps;
              ASSERT_EQ(plan.page_ids[e], table[L]);
              const int64_t ka = plan.page_first[e], kb = ka + plan.page_valid[e] - 1;
              ASSERT_EQ(kb, std::min<int64_t>(ka + ps, kv_len) - 1);
              ASSERT_TRUE(brute_any(p, qa, qb, ka, kb)) << policy_to_string(p) << " page " << L;
              ASSERT_EQ(plan.page_full[e] != 0, brute_all(p, qa, qb, ka, kb));
              if (!listed.empty()) {
                ASSERT_GT(L, listed.back());
              }
              listed.push_back(L);
            }
            int64_t expected = 0;
            for (int64_t L = 0; L < n_pages; ++L)
              expected += brute_any(p, qa, qb, L * ps, std::min<int64_t>(L * ps + ps, kv_len) - 1);
            ASSERT_EQ((int64_t)listed.size(), expected) << policy_to_string(p);
          }
        }
      }
    }
  }
}

// A plan over a run of the sequence's pages (one shard's) lists exactly the
// pages of the run holding a key some query of the block sees, by brute force.
TEST(Plan, OverARunOfPagesListsExactlyItsPagesWithVisibleKeys) {
  const int ps = 8;
  for (const PolicySpec& p : policies()) {
    for (int64_t kv_len : {9, 50, 131}) {
      const int64_t n_pages = (kv_len + ps - 1) / ps;
      for (int64_t first : {(int64_t)0, (int64_t)1, n_pages / 2, n_pages - 1}) {
        std::vector<int32_t> run((size_t)(n_pages - first));  // [pages of the run] their pool pages
        for (size_t i = 0; i < run.size(); ++i) run[i] = (int32_t)(500 - i);
        for (int n_q : {1, 5}) {
          const int64_t q0 = kv_len - n_q;
          const AttentionPlan plan = plan_attention_pages(p, run, first, ps, kv_len, q0, n_q, 4);
          ASSERT_TRUE(check_plan(plan, p, ps, kv_len).ok());
          for (int b = 0; b < plan.n_blocks(); ++b) {
            const int64_t qa = q0 + (int64_t)b * 4, qb = std::min<int64_t>(qa + 4, q0 + n_q) - 1;
            std::vector<int64_t> want;
            for (int64_t L = first; L < n_pages; ++L)
              if (brute_any(p, qa, qb, L * ps, std::min<int64_t>(L * ps + ps, kv_len) - 1)) want.push_back(L);
            std::vector<int64_t> got;
            for (int32_t e = plan.indptr[b]; e < plan.indptr[b + 1]; ++e) {
              const int64_t L = plan.page_first[e] / ps;
              ASSERT_EQ(plan.page_ids[e], run[(size_t)(L - first)]);
              got.push_back(L);
            }
            ASSERT_EQ(got, want) << policy_to_string(p) << " run from page " << first << ", " << kv_len << " keys";
          }
        }
      }
    }
  }
}

TEST(Plan, WindowReadsOnlyTheWindowPages) {
  PolicySpec w;
  w.kind = PolicyKind::Window;
  w.window = 64;
  std::vector<int32_t> table(1000 / 16 + 1, 3);
  const AttentionPlan plan = plan_attention(w, table, 16, 1000, 999, 1, 1);
  ASSERT_EQ(plan.n_blocks(), 1);
  // keys (935, 999] -> pages 58 .. 62
  EXPECT_EQ(plan.indptr[1], 5);
  EXPECT_EQ(plan.page_first.front(), 58 * 16);
}

}  // namespace stride

namespace stride {

// The checker itself must reject a bad plan (so the debug assert can fire).
TEST(Plan, CheckerRejectsBadPlans) {
  PolicySpec w;
  w.kind = PolicyKind::Window;
  w.window = 8;
  std::vector<int32_t> table(8, 0);
  AttentionPlan plan = plan_attention(w, table, 8, 63, 62, 1, 1);
  ASSERT_TRUE(check_plan(plan, w, 8, 63).ok());
  AttentionPlan extra = plan;  // list page 0, which the window hides
  extra.page_ids.insert(extra.page_ids.begin(), 0);
  extra.page_valid.insert(extra.page_valid.begin(), 8);
  extra.page_first.insert(extra.page_first.begin(), 0);
  extra.page_full.insert(extra.page_full.begin(), 0);
  extra.indptr[1] += 1;
  EXPECT_FALSE(check_plan(extra, w, 8, 63).ok());
  AttentionPlan full = plan;  // the edge page is not entirely visible
  for (auto& f : full.page_full) f = 1;
  EXPECT_FALSE(check_plan(full, w, 8, 63).ok());
}

}  // namespace stride
