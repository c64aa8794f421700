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

void rerank_group_scores(const KvPool& pool, const PageKeyCodes* codes, const std::vector<int32_t>& page_table,
                         int64_t group_pages, int64_t n_present, int64_t kv_len, const float* const* rows, int n_rows,
                         int head, float scale, std::span<const int64_t> shortlist, std::span<const int64_t> fixed,
                         RerankScratch& x, float* scores) {
  const int ps = pool.shape().page_size;
  const size_t n_scored = shortlist.size() + fixed.size();
  x.lse.assign(n_scored * (size_t)n_rows, -INFINITY);  // [n_scored, n_rows]
  x.page_lse.resize((size_t)n_rows);
  x.work.resize((size_t)std::max(4, kInt8RowTile) * (codes ? std::max(ps, codes->padded_page()) : ps));
  if (codes) x.quantized.quantize(rows, n_rows, pool.shape().head_dim_k);
  for (size_t i = 0; i < n_scored; ++i) {
    const int64_t G = i < shortlist.size() ? shortlist[i] : fixed[i - shortlist.size()];
    float* lse = x.lse.data() + i * (size_t)n_rows;
    bool first = true;
    for (int64_t L = G * group_pages; L < std::min(n_present, (G + 1) * group_pages); ++L) {
      const int64_t n = std::min<int64_t>(ps, kv_len - L * ps);
      const int32_t page = page_table[(size_t)L];
      if (page < 0 || n <= 0) continue;
      // A group's first page writes its log-sum-exps directly: no log_add per row.
      float* out = first ? lse : x.page_lse.data();
      if (codes && n == ps && codes->current(pool, page))
        page_logsumexp_int8(*codes, page, head, x.quantized, scale, x.work.data(), out);
      else
        page_logsumexp(pool, page, head, (int)n, rows, n_rows, scale, x.work.data(), out);
      if (!first)
        for (int r = 0; r < n_rows; ++r) lse[r] = log_add(lse[r], x.page_lse[(size_t)r]);
      first = false;
    }
  }
  // Each row's normaliser, the log-sum-exp over every scored group: shifted
  // by the row's largest, one exp per group and one log per row.
  x.top.assign((size_t)n_rows, -INFINITY);
  std::fill(x.page_lse.begin(), x.page_lse.end(), 0.f);
  for (size_t i = 0; i < n_scored; ++i)
    for (int r = 0; r < n_rows; ++r) x.top[(size_t)r] = std::max(x.top[(size_t)r], x.lse[i * (size_t)n_rows + r]);
  for (size_t i = 0; i < n_scored; ++i)
    for (int r = 0; r < n_rows; ++r)
      if (x.top[(size_t)r] > -INFINITY) x.page_lse[(size_t)r] += std::exp(x.lse[i * (size_t)n_rows + r] - x.top[(size_t)r]);
  for (int r = 0; r < n_rows; ++r)
    x.page_lse[(size_t)r] = x.top[(size_t)r] > -INFINITY ? x.top[(size_t)r] + std::log(x.page_lse[(size_t)r]) : -INFINITY;
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
