#include "attention/topk_rerank.h"

#include <algorithm>
#include <cmath>

#include "attention/page_logsumexp.h"
#include "kernels/simd/exp.h"

namespace stride {

namespace {

constexpr size_t kPrefetchPagesAhead = 4;

// x[i] = exp(x[i]) over n values, 8 lanes at a time (simd::exp_ps, 1-2 ulp).
void exp_in_place(float* x, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, simd::exp_ps(_mm256_loadu_ps(x + i)));
  if (i == n) return;
  float tail[8];
  for (size_t j = 0; j < 8; ++j) tail[j] = i + j < n ? x[i + j] : 0.f;
  _mm256_storeu_ps(tail, simd::exp_ps(_mm256_loadu_ps(tail)));
  for (size_t j = 0; i + j < n; ++j) x[i + j] = tail[j];
}

// Reorders x.visits, whose groups each hold a contiguous run, so that the
// runs come by their first page, ascending; each run keeps its order.
void order_groups_by_first_page(RerankScratch& x) {
  x.runs.clear();  // (first page << 32 | first visit), then sorted
  for (size_t v = 0; v < x.visits.size(); ++v)
    if (v == 0 || x.visits[v - 1].group != x.visits[v].group)
      x.runs.push_back((uint64_t)(uint32_t)x.visits[v].page << 32 | (uint32_t)v);
  std::sort(x.runs.begin(), x.runs.end());
  x.ordered.clear();
  for (const uint64_t run : x.runs) {
    size_t v = (uint32_t)run;
    const uint32_t group = x.visits[v].group;
    for (; v < x.visits.size() && x.visits[v].group == group; ++v) x.ordered.push_back(x.visits[v]);
  }
  x.visits.swap(x.ordered);
}

}  // namespace

void rerank_group_scores(const KvPool& pool, const PageKeyCodes* codes, const std::vector<int32_t>& page_table,
                         int64_t group_pages, int64_t n_present, int64_t kv_len, const float* const* rows, int n_rows,
                         int head, float scale, std::span<const int64_t> shortlist, std::span<const int64_t> fixed,
                         RerankScratch& x, float* scores) {
  const int ps = pool.shape().page_size;
  const size_t n_scored = shortlist.size() + fixed.size(), R = (size_t)n_rows;
  // A group's mass per row in two parts, sum * exp(top), so that adding
  // pages up and normalising take no log.
  x.top.assign(n_scored * R, -INFINITY);  // [n_scored, n_rows]
  x.sum.assign(n_scored * R, 0.f);        // [n_scored, n_rows]
  x.page_top.resize(R);
  x.page_sum.resize(R);
  x.work.resize((size_t)std::max(4, kInt8RowTile) * (codes ? std::max(ps, codes->padded_page()) : ps));
  if (codes) x.quantized.quantize(rows, n_rows, pool.shape().head_dim_k);
  auto group_of = [&](size_t i) { return i < shortlist.size() ? shortlist[i] : fixed[i - shortlist.size()]; };
  // The pages to score, in group order; then whole groups by their first
  // page, so that the copies are read in ascending address order (a kv head's
  // records are adjacent in page order, page_key_codes.h). A group's parts
  // take only its own pages, in its own order: the order groups are visited
  // in changes no arithmetic. Each page is still requested
  // kPrefetchPagesAhead pages before it is read.
  x.visits.clear();
  for (size_t i = 0; i < n_scored; ++i) {
    const int64_t G = group_of(i);
    for (int64_t L = G * group_pages; L < std::min(n_present, (G + 1) * group_pages); ++L) {
      const int64_t n = std::min<int64_t>(ps, kv_len - L * ps);
      const int32_t page = page_table[(size_t)L];
      if (page < 0 || n <= 0) continue;
      const bool int8 = codes && n == ps && codes->current(pool, page);
      x.visits.push_back({page, (int32_t)n, (uint32_t)i, int8});
    }
  }
  order_groups_by_first_page(x);
  const size_t ahead = kPrefetchPagesAhead;
  auto prefetch = [&](size_t v) {
    if (v < x.visits.size() && x.visits[v].int8) codes->prefetch(x.visits[v].page, head);
  };
  for (size_t v = 0; v < std::min(ahead, x.visits.size()); ++v) prefetch(v);
  for (size_t v = 0; v < x.visits.size(); ++v) {
    prefetch(v + ahead);
    const RerankVisit& visit = x.visits[v];
    float* top = x.top.data() + visit.group * R;
    float* sum = x.sum.data() + visit.group * R;
    // A group's first page writes its parts directly.
    const bool first = v == 0 || x.visits[v - 1].group != visit.group;
    float* ptop = first ? top : x.page_top.data();
    float* psum = first ? sum : x.page_sum.data();
    if (visit.int8) {
      page_logsumexp_int8(*codes, visit.page, head, x.quantized, scale, x.work.data(), ptop, psum);
    } else {
      page_logsumexp(pool, visit.page, head, visit.n, rows, n_rows, scale, x.work.data(), ptop);
      std::fill(psum, psum + R, 1.f);
    }
    if (!first)
      for (size_t r = 0; r < R; ++r) {
        const float m = std::max(top[r], ptop[r]);
        if (m == -INFINITY) continue;
        sum[r] = sum[r] * std::exp(top[r] - m) + psum[r] * std::exp(ptop[r] - m);
        top[r] = m;
      }
  }
  // Each row's normaliser over every scored group, shifted by the row's
  // largest top: w[i][r] = sum * exp(top - row top), one vector exp for all.
  x.row_top.assign(R, -INFINITY);
  for (size_t i = 0; i < n_scored; ++i)
    for (size_t r = 0; r < R; ++r) x.row_top[r] = std::max(x.row_top[r], x.top[i * R + r]);
  for (size_t i = 0; i < n_scored; ++i)
    for (size_t r = 0; r < R; ++r)
      x.top[i * R + r] = x.row_top[r] > -INFINITY ? x.top[i * R + r] - x.row_top[r] : -INFINITY;
  exp_in_place(x.top.data(), n_scored * R);
  x.row_total.assign(R, 0.f);
  for (size_t i = 0; i < n_scored; ++i)
    for (size_t r = 0; r < R; ++r) x.row_total[r] += x.top[i * R + r] *= x.sum[i * R + r];
  for (size_t i = 0; i < shortlist.size(); ++i) {
    float share = 0.f;
    for (size_t r = 0; r < R; ++r)
      if (x.row_total[r] > 0.f) share += x.top[i * R + r] / x.row_total[r];
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
