#include "attention/topk_rerank.h"

#include <algorithm>
#include <cmath>

#include "attention/page_logsumexp.h"

namespace stride {

namespace {

// log(exp(a) + exp(b)), with -inf for an empty sum.
float log_add(float a, float b) {
  const float top = std::max(a, b);
  if (top == -INFINITY) return top;
  return top + std::log(std::exp(a - top) + std::exp(b - top));
}

}  // namespace

void rerank_group_scores(const KvPool& pool, const std::vector<int32_t>& page_table, int64_t group_pages,
                         int64_t n_present, int64_t kv_len, const float* const* rows, int n_rows, int head,
                         float scale, std::span<const int64_t> shortlist, std::span<const int64_t> fixed,
                         RerankScratch& x, float* scores) {
  const int ps = pool.shape().page_size;
  const size_t n_scored = shortlist.size() + fixed.size();
  x.lse.assign(n_scored * (size_t)n_rows, -INFINITY);  // [n_scored, n_rows]
  x.page_lse.resize((size_t)n_rows);
  x.work.resize((size_t)4 * ps);
  for (size_t i = 0; i < n_scored; ++i) {
    const int64_t G = i < shortlist.size() ? shortlist[i] : fixed[i - shortlist.size()];
    float* lse = x.lse.data() + i * (size_t)n_rows;
    for (int64_t L = G * group_pages; L < std::min(n_present, (G + 1) * group_pages); ++L) {
      const int64_t n = std::min<int64_t>(ps, kv_len - L * ps);
      if (page_table[(size_t)L] < 0 || n <= 0) continue;
      page_logsumexp(pool, page_table[(size_t)L], head, (int)n, rows, n_rows, scale, x.work.data(),
                     x.page_lse.data());
      for (int r = 0; r < n_rows; ++r) lse[r] = log_add(lse[r], x.page_lse[(size_t)r]);
    }
  }
  for (int r = 0; r < n_rows; ++r) {
    float total = -INFINITY;
    for (size_t i = 0; i < n_scored; ++i) total = log_add(total, x.lse[i * (size_t)n_rows + r]);
    x.page_lse[(size_t)r] = total;  // the row's normaliser
  }
  for (size_t i = 0; i < shortlist.size(); ++i) {
    float share = 0.f;
    for (int r = 0; r < n_rows; ++r) {
      const float total = x.page_lse[(size_t)r];
      if (total > -INFINITY) share += std::exp(x.lse[i * (size_t)n_rows + r] - total);
    }
    scores[i] = share / (float)std::max(1, n_rows);
  }
}

std::vector<int> rerank_block_queries(int nq, int64_t n_rows) {
  std::vector<int> out;
  const int n = (int)std::min<int64_t>(nq, n_rows > 0 ? n_rows : kRerankBlockQueries);
  const int stride = n > 0 ? nq / n : 1;
  for (int j = 0; j < n; ++j) out.push_back(nq - 1 - j * stride);
  return out;
}

int64_t rerank_mass_picks(double P, std::span<const float> shares, int64_t min_picks, int64_t max_picks) {
  max_picks = std::min<int64_t>(max_picks, (int64_t)shares.size());
  min_picks = std::min(min_picks, max_picks);
  double shortlisted = 0;
  for (const float e : shares) shortlisted += e;
  double have = std::max(0.0, 1.0 - shortlisted);  // the fixed groups' share
  int64_t k = 0;
  for (; k < max_picks && (k < min_picks || have < P); ++k) have += shares[(size_t)k];
  return k;
}

}  // namespace stride
