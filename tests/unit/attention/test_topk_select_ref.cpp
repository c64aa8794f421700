// select_topk (batched page scores, partial ranking, reused buffers) against
// a plain selection written from its definition: score every present page
// with the scalar summary_bound per row, sort every candidate group, cut.
// Queries and keys are small integers, so every bound is an exact integer
// whatever the summation order: the scores of both sides are equal, ties are
// frequent, and the tie rule (lower group first) is checked too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/plan.h"
#include "attention/policy.h"
#include "attention/topk_bound.h"
#include "attention/topk_selector.h"
#include "kv/store/page_summary.h"

namespace stride {
namespace {

// The selection from its definition, one (query block, kv head) at a time.
TopkSelection reference_select(const PolicySpec& p, const std::vector<int32_t>& table, int page_size,
                               int64_t kv_len, int64_t q_pos0, int n_q, int q_block, const PageSummaries& sums,
                               const float* q, int n_head, int n_kv, const TopkColdPages* cold, int n_next) {
  TopkSelection sel;
  sel.q_block = q_block;
  sel.n_q = n_q;
  sel.q_pos0 = q_pos0;
  sel.n_kv_heads = n_kv;
  sel.head_indptr.assign(1, 0);
  const int dim = sums.head_dim(), group = n_head / n_kv;
  const double s = 1.0 / std::sqrt((double)dim);
  const int64_t n_logical = std::min<int64_t>((int64_t)table.size(), (kv_len + page_size - 1) / page_size);
  auto present = [&](int64_t L) { return table[L] >= 0 || (cold && (*cold->tier_key)[L] != 0); };
  for (int q_first = 0; q_first < n_q; q_first += q_block) {
    const int nq = std::min(q_block, n_q - q_first);
    const int64_t qa = q_pos0 + q_first, qb = qa + nq - 1;
    const int64_t n_present = std::min<int64_t>(n_logical, qb / page_size + 1);
    const TopkBlockBudget bud = topk_block_budget(p, page_size, n_logical, qa, qb);
    const TopkGeometry& geo = bud.geo;
    const int64_t gp = geo.group_pages;
    for (int h = 0; h < n_kv; ++h) {
      std::vector<std::vector<float>> rows;  // [rows][dim]
      for (int i = 0; i < nq; ++i)
        for (int j = 0; j < group; ++j) {
          const float* r = q + ((int64_t)(q_first + i) * n_head + h * group + j) * dim;
          rows.emplace_back(r, r + dim);
        }
      if (p.pooled_estimate && nq > 1) {
        std::vector<std::vector<float>> means(group, std::vector<float>(dim, 0.f));
        for (int i = 0; i < nq; ++i)
          for (int j = 0; j < group; ++j)
            for (int c = 0; c < dim; ++c) means[j][c] += rows[(size_t)i * group + j][c];
        for (auto& m : means)
          for (float& v : m) v /= (float)nq;
        rows = means;
      }
      auto page_bound = [&](int64_t L) {
        const float* mn = table[L] >= 0 ? sums.min(table[L], h)
                                        : cold->summaries + ((size_t)L * n_kv + h) * 2 * dim;
        float best = -INFINITY;
        for (const auto& r : rows) best = std::max(best, summary_bound(r.data(), mn, mn + dim, dim));
        return best;
      };
      auto group_bound = [&](int64_t G) {
        float best = -INFINITY;
        for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L)
          if (present(L)) best = std::max(best, page_bound(L));
        return best;
      };
      std::vector<uint8_t> keep(geo.n_groups, 1);
      if (bud.keep < geo.n_groups || p.mass > 0.0) {
        std::vector<std::pair<float, int64_t>> cand;  // (score, group)
        for (int64_t G = geo.n_sink; G < geo.local_from; ++G) {
          cand.push_back({group_bound(G), G});
          keep[G] = 0;
        }
        std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) {
          return a.first != b.first ? a.first > b.first : a.second < b.second;
        });
        int64_t picks = bud.keep - bud.n_fixed;
        if (p.mass > 0.0) {
          // Estimated log-mass of a group: s * bound + log(keys it holds).
          std::vector<double> fixed_est, cand_est;
          for (int64_t G = 0; G < geo.n_groups; ++G) {
            if (G >= geo.n_sink && G < geo.local_from) continue;
            int64_t keys = 0;
            for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L)
              if (present(L)) keys += std::max<int64_t>(0, std::min({(L + 1) * page_size, kv_len, qb + 1}) - L * page_size);
            fixed_est.push_back(keys > 0 ? (float)s * group_bound(G) + std::log((float)keys) : -INFINITY);
          }
          for (const auto& [score, G] : cand) {
            int64_t keys = 0;
            for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) keys += present(L) ? page_size : 0;
            cand_est.push_back(keys > 0 ? (float)s * score + std::log((float)keys) : -INFINITY);
          }
          double top = -INFINITY;
          for (double e : fixed_est) top = std::max(top, e);
          for (double e : cand_est) top = std::max(top, e);
          const int64_t max_picks = std::min<int64_t>(picks, (int64_t)cand.size());
          const int64_t min_picks = std::min(bud.min_picks, max_picks);
          if (top > -INFINITY) {
            double have = 0, total = 0;
            for (double e : fixed_est) have += std::exp(e - top);
            total = have;
            for (double e : cand_est) total += std::exp(e - top);
            picks = 0;
            while (picks < max_picks && (picks < min_picks || have < p.mass * total))
              have += std::exp(cand_est[(size_t)picks++] - top);
          } else {
            picks = min_picks;
          }
        }
        for (int64_t i = 0; i < picks; ++i) keep[cand[i].second] = 1;
        for (int64_t i = picks; i < std::min<int64_t>((int64_t)cand.size(), picks + n_next); ++i)
          for (int64_t L = cand[i].second * gp; L < std::min(n_present, (cand[i].second + 1) * gp); ++L)
            if (present(L)) sel.next_pages.push_back(L);
      }
      for (int64_t L = 0; L < n_present; ++L)
        if (keep[L / gp] && present(L) && L * page_size < kv_len) sel.pages.push_back(L);
      sel.head_indptr.push_back((int32_t)sel.pages.size());
    }
  }
  return sel;
}

struct Case {
  std::string policy;
  int n_q = 1;     // queries of the step (a decode step: 1)
  bool cold = false;  // some pages in the tier (scored from kept summaries)
  int n_next = 0;
};

// Random integer keys and queries over a shuffled page table with holes
// (and tier pages when c.cold): select_topk must equal the reference.
void check_case(const Case& c, uint32_t seed) {
  SCOPED_TRACE(c.policy + " n_q=" + std::to_string(c.n_q) + " cold=" + std::to_string(c.cold) +
               " seed=" + std::to_string(seed));
  const auto pol = parse_policy(c.policy);
  ASSERT_TRUE(pol.ok()) << c.policy;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> key_val(-8, 8), q_val(-4, 4), ctx_len(100, 12000);
  const int n_head = 6, n_kv = 2, dim = 64, ps = 16;
  const int64_t kv_len = ctx_len(rng) + c.n_q;
  const int64_t n_logical = (kv_len + ps - 1) / ps;
  const int32_t n_phys = (int32_t)n_logical + 8;
  PageSummaries sums(n_phys, n_kv, dim);
  std::vector<float> k((size_t)ps * n_kv * dim);
  for (int32_t page = 0; page < n_phys; ++page) {
    for (float& x : k) x = (float)key_val(rng);
    sums.update(page, 0, ps, k.data(), (int64_t)n_kv * dim);
  }
  std::vector<int32_t> table(n_logical);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);  // pages anywhere in the pool
  std::vector<uint64_t> tier_key(n_logical, 0);
  std::vector<float> cold_sums((size_t)n_logical * n_kv * 2 * dim);
  std::uniform_int_distribution<int> fate(0, 9);
  for (int64_t L = 0; L + 4 < n_logical; ++L) {  // the last pages stay (being written)
    const int f = fate(rng);
    if (f == 0) {
      table[L] = -1;  // released: not scored, never read
    } else if (f <= 3 && c.cold) {
      std::copy(sums.min(table[L], 0), sums.min(table[L], 0) + n_kv * 2 * dim, cold_sums.begin() + L * n_kv * 2 * dim);
      table[L] = -1;
      tier_key[L] = 100 + L;
    }
  }
  std::vector<float> q((size_t)c.n_q * n_head * dim);
  for (float& x : q) x = (float)q_val(rng);
  const TopkColdPages cold{&tier_key, cold_sums.data()};
  const int q_block = policy_q_block(*pol, c.n_q);
  const int64_t q_pos0 = kv_len - c.n_q;
  const TopkColdPages* cp = c.cold ? &cold : nullptr;
  const TopkSelection want = reference_select(*pol, table, ps, kv_len, q_pos0, c.n_q, q_block, sums, q.data(),
                                              n_head, n_kv, cp, c.n_next);
  // Twice: the second call runs on buffers the first left behind.
  for (int rep = 0; rep < 2; ++rep) {
    const TopkSelection got = select_topk(*pol, table, ps, kv_len, q_pos0, c.n_q, q_block, sums, q.data(), n_head,
                                          n_kv, cp, c.n_next);
    EXPECT_EQ(got.head_indptr, want.head_indptr);
    EXPECT_EQ(got.pages, want.pages);
    EXPECT_EQ(got.next_pages, want.next_pages);
  }
}

TEST(TopkSelectReference, FixedBudgetMatches) {
  for (const char* pol : {"topk:sparsity=0.9", "topk:sparsity=0.5,block=64", "topk:sparsity=0.8,block=48,sinks=40,window=200",
                          "topk:sparsity=0.99"})
    for (bool cold : {false, true})
      for (uint32_t seed = 1; seed <= 4; ++seed) check_case({pol, 1, cold, seed % 2 ? 4 : 0}, seed);
}

TEST(TopkSelectReference, MassBudgetMatches) {
  for (const char* pol : {"topk:mass=0.95,max=2048", "topk:mass=0.9,min=64,max=512,window=64",
                          "topk:mass=0.5,block=32", "topk:mass=0.99"})
    for (bool cold : {false, true})
      for (uint32_t seed = 1; seed <= 4; ++seed) check_case({pol, 1, cold, seed % 2 ? 4 : 0}, seed);
}

TEST(TopkSelectReference, PrefillBlocksMatch) {
  // Per query, per block of 32 queries, and pooled (64 queries: the means
  // of integers over 32 rows stay exact).
  for (const char* pol : {"topk:sparsity=0.8", "topk:sparsity=0.7,select=block", "topk:mass=0.9,select=block",
                          "topk:mass=0.95,select=block,estimate=pooled", "topk:sparsity=0.9,block=32,select=block,estimate=pooled"})
    for (bool cold : {false, true}) check_case({pol, 64, cold, 4}, 7);
}

// The batched page scores equal the single-page kernel bit for bit, for
// every kv head and any row count (one 8-row tile, part of one, and more:
// a decode step of 7 query heads per kv head is one tile), and skip pages
// with a negative id.
TEST(TopkSelectReference, BatchedBoundsEqualSingle) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int dim : {8, 64, 67, 128})
    for (int n_rows : {1, 2, 3, 4, 5, 7, 8, 9, 17}) {
      const int n_kv = 3, n_pages = 50;
      PageSummaries sums(n_pages, n_kv, dim);
      std::vector<float> k((size_t)4 * n_kv * dim);
      for (int32_t page = 0; page < n_pages; ++page) {
        for (float& x : k) x = nd(rng);
        sums.update(page, 0, 4, k.data(), (int64_t)n_kv * dim);
      }
      std::vector<float> q((size_t)n_kv * n_rows * dim);
      for (float& x : q) x = nd(rng);
      std::vector<const float*> rows;  // [n_kv][n_rows]
      for (int r = 0; r < n_kv * n_rows; ++r) rows.push_back(q.data() + (size_t)r * dim);
      std::vector<int32_t> ids(n_pages);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng);
      ids[5] = -1;
      std::vector<float> out((size_t)n_kv * n_pages);
      max_summary_bounds(rows.data(), n_rows, sums.data(), ids.data(), n_pages, n_kv, dim, out.data());
      for (int h = 0; h < n_kv; ++h)
        for (int i = 0; i < n_pages; ++i) {
          const float got = out[(size_t)h * n_pages + i];
          if (ids[i] < 0) {
            EXPECT_EQ(got, -INFINITY);
            continue;
          }
          const float* mn = sums.min(ids[i], h);
          const float* mx = sums.max(ids[i], h);
          const float* const* hr = rows.data() + (size_t)h * n_rows;
          EXPECT_EQ(got, max_summary_bound(hr, n_rows, mn, mx, dim)) << "dim " << dim << " rows " << n_rows;
          const float ref = max_summary_bound_ref(hr, n_rows, mn, mx, dim);
          EXPECT_NEAR(got, ref, 1e-4f * (1.f + std::fabs(ref)));
        }
    }
}

}  // namespace
}  // namespace stride
