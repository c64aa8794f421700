// neighbors=before|after|both: each page a prompt block picks by score also
// reads the page(s) beside it, so a needle sentence cut by a page boundary is
// read whole. Checked page by page against the definition: the selection
// without the key, plus the neighbours of every page it picked (a page that is
// neither the sink nor in the local window), and nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "attention/topk_selector.h"
#include "kv/store/page_summary.h"

namespace stride {
namespace {

struct Prompt {
  int n_head = 4, n_kv = 2, dim = 16, q_block = 32, page_size = 16;
  int64_t n_tok = 0, q_pos0 = 0;
  int n_q = 0;
  std::vector<int32_t> table;
  PageSummaries sums{0, 2, 16};
  std::vector<float> q;  // [n_q, n_head, dim]
};

Prompt random_prompt(int n_pages, unsigned seed) {
  Prompt pr;
  pr.n_tok = (int64_t)n_pages * pr.page_size;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  pr.sums = PageSummaries(n_pages, pr.n_kv, pr.dim);
  std::vector<float> k((size_t)pr.page_size * pr.n_kv * pr.dim);
  for (int32_t page = 0; page < n_pages; ++page) {
    for (float& x : k) x = nd(rng);
    pr.sums.update(page, 0, pr.page_size, k.data(), (int64_t)pr.n_kv * pr.dim);
  }
  pr.table.resize(n_pages);
  std::iota(pr.table.begin(), pr.table.end(), 0);
  pr.q_pos0 = pr.n_tok / 2;  // the second half as one chunk after the first
  pr.n_q = (int)(pr.n_tok - pr.q_pos0);
  pr.q.resize((size_t)pr.n_q * pr.n_head * pr.dim);
  for (float& x : pr.q) x = nd(rng);
  return pr;
}

TopkSelection select(const std::string& policy, const Prompt& pr) {
  const auto p = parse_policy(policy);
  EXPECT_TRUE(p.ok()) << policy << ": " << p.status().to_string();
  return select_topk(*p, pr.table, pr.page_size, pr.n_tok, pr.q_pos0, pr.n_q, pr.q_block, pr.sums, pr.q.data(),
                     pr.n_head, pr.n_kv);
}

std::vector<int64_t> pages_of(const TopkSelection& sel, size_t i) {
  return {sel.pages.begin() + sel.head_indptr[i], sel.pages.begin() + sel.head_indptr[i + 1]};
}

// base: the policy without neighbors; key: "before", "after" or "both".
void check_neighbors(const std::string& base, const std::string& key, const Prompt& pr, int64_t window) {
  SCOPED_TRACE(base + ",neighbors=" + key);
  const TopkSelection plain = select(base, pr);
  const TopkSelection with = select(base + ",neighbors=" + key, pr);
  ASSERT_EQ(with.n_blocks(), plain.n_blocks());
  const bool before = key == "before" || key == "both", after = key == "after" || key == "both";
  int64_t added = 0;
  for (int b = 0; b < plain.n_blocks(); ++b) {
    const int64_t qa = pr.q_pos0 + (int64_t)b * pr.q_block;
    const int64_t qb = std::min<int64_t>(qa + pr.q_block, pr.n_tok) - 1;
    const int64_t last_page = qb / pr.page_size;
    for (int h = 0; h < pr.n_kv; ++h) {
      const size_t i = (size_t)b * pr.n_kv + h;
      const std::vector<int64_t> got = pages_of(with, i);
      std::set<int64_t> want;
      for (const int64_t L : pages_of(plain, i)) {
        want.insert(L);
        const bool fixed = L == 0 || (L + 1) * pr.page_size > qa - window + 1;  // sink, or holds a window token
        if (fixed) continue;
        if (before && L > 0) want.insert(L - 1);
        if (after && L < last_page) want.insert(L + 1);
      }
      added += (int64_t)want.size() - (int64_t)pages_of(plain, i).size();
      EXPECT_EQ(got, std::vector<int64_t>(want.begin(), want.end())) << "block at " << qa << ", kv head " << h;
    }
  }
  EXPECT_GT(added, 0) << "no pick had a neighbour left out: the check would pass without the key";
}

TEST(PickNeighbors, EachPickedPageBringsThePageBesideIt) {
  const Prompt pr = random_prompt(120, 11);
  for (const char* key : {"before", "after", "both"}) {
    check_neighbors("sparse_prefill:sparsity=0.9,window=64", key, pr, 64);  // a fixed budget: picks every block
    check_neighbors("sparse_prefill:mass=0.5,window=64", key, pr, 64);
    check_neighbors("topk:sparsity=0.8,select=block,window=32", key, pr, 32);
  }
}

TEST(PickNeighbors, NoneIsTheSelectionWithoutTheKey) {
  const Prompt pr = random_prompt(80, 12);
  const TopkSelection a = select("sparse_prefill:sparsity=0.9", pr);
  const TopkSelection b = select("sparse_prefill:sparsity=0.9,neighbors=none", pr);
  EXPECT_EQ(a.pages, b.pages);
  EXPECT_EQ(a.head_indptr, b.head_indptr);
}

TEST(PickNeighbors, ParsesAndPrintsRoundTrip) {
  for (const char* s : {"sparse_prefill:neighbors=before", "sparse_prefill:window=256,neighbors=both",
                        "topk:sparsity=0.9,neighbors=after", "sparse_prefill:neighbors=none"}) {
    const auto p = parse_policy(s);
    ASSERT_TRUE(p.ok()) << s << ": " << p.status().to_string();
    const std::string printed = policy_to_string(*p);
    const auto again = parse_policy(printed);
    ASSERT_TRUE(again.ok()) << printed;
    EXPECT_EQ(*again, *p) << printed;
  }
  EXPECT_EQ(parse_policy("sparse_prefill:neighbors=before")->neighbors, PickNeighbors::Before);
  EXPECT_EQ(parse_policy("sparse_prefill:neighbors=both")->neighbors, PickNeighbors::Both);
  EXPECT_EQ(parse_policy("sparse_prefill")->neighbors, PickNeighbors::None);
  EXPECT_NE(policy_to_string(*parse_policy("sparse_prefill:neighbors=after")).find(",neighbors=after"),
            std::string::npos);
  for (const char* bad : {"sparse_prefill:neighbors=", "sparse_prefill:neighbors=left", "topk:sparsity=0.9,"
                          "resident=8,neighbors=before"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

}  // namespace
}  // namespace stride
