// The local window of a prompt block (topk window=W; sparse_prefill reads
// 512 tokens by default): the pages select_topk always reads for a block,
// against a plain loop over pages and tokens written from the definition:
// the sink page, and every page holding a token of (q_first - W, q_last].
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "attention/topk_selector.h"
#include "kv/store/page_summary.h"

namespace stride {
namespace {

// Does page L (of page_size tokens) hold a token in (qa - window, qb]?
bool page_in_window(int64_t L, int page_size, int64_t qa, int64_t qb, int64_t window) {
  for (int64_t t = L * page_size; t < (L + 1) * page_size; ++t)
    if (t > qa - window && t <= qb) return true;
  return false;
}

// A budget that picks nothing beyond the sink and the window (sparsity 0.99
// over fewer than 100 pages asks for one page, which the sink already is),
// so the pages read are exactly the block's fixed ones.
void check_window(const std::string& policy, int page_size, int64_t window) {
  SCOPED_TRACE(policy + " page=" + std::to_string(page_size));
  const auto p = parse_policy(policy);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->window, window);
  const int n_head = 4, n_kv = 2, dim = 16, q_block = 32;
  const int64_t n_tok = 90 * page_size;  // < 100 pages
  const int n_pages = (int)(n_tok / page_size);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  PageSummaries sums(n_pages, n_kv, dim);
  std::vector<float> k((size_t)page_size * n_kv * dim);
  for (int32_t page = 0; page < n_pages; ++page) {
    for (float& x : k) x = nd(rng);
    sums.update(page, 0, page_size, k.data(), (int64_t)n_kv * dim);
  }
  std::vector<int32_t> table(n_pages);
  std::iota(table.begin(), table.end(), 0);
  // The prompt's second half as one chunk after the first: blocks start
  // far enough in for the window to leave pages out.
  const int64_t q_pos0 = n_tok / 2;
  const int n_q = (int)(n_tok - q_pos0);
  std::vector<float> q((size_t)n_q * n_head * dim);
  for (float& x : q) x = nd(rng);
  const TopkSelection sel =
      select_topk(*p, table, page_size, n_tok, q_pos0, n_q, q_block, sums, q.data(), n_head, n_kv);
  ASSERT_EQ(sel.n_blocks(), (n_q + q_block - 1) / q_block);
  for (int b = 0; b < sel.n_blocks(); ++b) {
    const int64_t qa = q_pos0 + (int64_t)b * q_block;
    const int64_t qb = std::min<int64_t>(qa + q_block, n_tok) - 1;
    std::vector<int64_t> want;
    for (int64_t L = 0; L * page_size <= qb; ++L)
      if (L == 0 || page_in_window(L, page_size, qa, qb, window)) want.push_back(L);
    for (int h = 0; h < n_kv; ++h) {
      const size_t i = (size_t)b * n_kv + h;
      const std::vector<int64_t> got(sel.pages.begin() + sel.head_indptr[i],
                                     sel.pages.begin() + sel.head_indptr[i + 1]);
      EXPECT_EQ(got, want) << "block at " << qa << ", kv head " << h;
    }
  }
}

TEST(PrefillWindow, SparsePrefillReadsThe512TokensBeforeEachBlock) {
  check_window("sparse_prefill:sparsity=0.99", 32, 512);
  check_window("sparse_prefill:sparsity=0.99", 16, 512);
}

TEST(PrefillWindow, WindowKeySetsHowFarBackEveryQuerySees) {
  check_window("sparse_prefill:sparsity=0.99,window=32", 32, 32);  // one page back: the old default
  check_window("sparse_prefill:sparsity=0.99,window=100", 32, 100);
  check_window("sparse_prefill:sparsity=0.99,window=256", 16, 256);
  check_window("topk:sparsity=0.99,select=block,window=200", 32, 200);
}

}  // namespace
}  // namespace stride
