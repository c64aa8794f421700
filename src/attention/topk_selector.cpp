#include "attention/topk_selector.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "attention/head_budget.h"
#include "attention/topk_bound.h"
#include "attention/topk_rerank.h"
#include "core/worker_scratch.h"

namespace stride {

int64_t topk_keep_count(double sparsity, int64_t n_groups, int64_t n_fixed) {
  const int64_t want = (int64_t)std::ceil((1.0 - sparsity) * (double)n_groups - 1e-9);
  return std::min(n_groups, std::max(n_fixed, want));
}

TopkGeometry topk_geometry(const PolicySpec& p, int page_size, int64_t n_pages_present,
                           int64_t q_first) {
  TopkGeometry g;
  g.group_pages = p.block > page_size ? p.block / page_size : 1;
  const int64_t B = g.group_pages * page_size;  // tokens per group
  g.n_groups = (n_pages_present + g.group_pages - 1) / g.group_pages;
  g.n_sink = std::min(g.n_groups, p.sinks > 0 ? (p.sinks + B - 1) / B : 1);
  const int64_t window = p.window > 0 ? p.window : B;
  g.local_from = std::min(g.n_groups, std::max<int64_t>(0, q_first - window + 1) / B);
  return g;
}

TopkBlockBudget topk_block_budget(const PolicySpec& p, int page_size, int64_t n_logical,
                                  int64_t q_first, int64_t q_last) {
  TopkBlockBudget b;
  b.geo = topk_geometry(p, page_size, std::min<int64_t>(n_logical, q_last / page_size + 1), q_first);
  b.n_fixed = b.geo.n_sink + (b.geo.n_groups - std::max(b.geo.local_from, b.geo.n_sink));
  if (p.mass > 0.0) {
    // Adaptive: keep is the most the step may read (the hot-set reservation
    // counts on it); selection reads between min and keep.
    const int64_t B = b.geo.group_pages * page_size;
    const int64_t cap = p.max_tokens > 0 ? (p.max_tokens + B - 1) / B : b.geo.n_groups;
    b.keep = std::min(b.geo.n_groups, b.n_fixed + cap);
    b.min_picks = std::min(b.keep - b.n_fixed, (p.min_tokens + B - 1) / B);
    return b;
  }
  b.keep = topk_keep_count(p.sparsity, b.geo.n_groups, b.n_fixed);
  b.min_picks = b.keep - b.n_fixed;
  return b;
}

namespace {

// Rows of one query block for every kv head: queries x the group's heads,
// or under a pooled estimate one mean query per head of the group.
struct BlockRows {
  std::vector<const float*> rows;  // [n_kv_heads][n_rows]
  std::vector<float> pooled;       // [n_kv_heads, group, dim]
  int n_rows = 0;
};

// The rows estimate=rerank's second stage scores on a prompt chunk: a few
// of the block's queries (rerank_block_queries) x the group's heads.
void gather_sampled_rows(BlockRows& br, const float* q, int q_first, int nq, int n_head, int n_kv, int dim,
                         int64_t n_sampled) {
  const int group = n_head / n_kv;
  const std::vector<int> picked = rerank_block_queries(nq, n_sampled);
  br.rows.clear();
  br.n_rows = (int)picked.size() * group;
  for (int h = 0; h < n_kv; ++h)
    for (const int i : picked)
      for (int j = 0; j < group; ++j)
        br.rows.push_back(q + ((int64_t)(q_first + i) * n_head + (int64_t)h * group + j) * dim);
}

void gather_rows(BlockRows& br, const float* q, int q_first, int nq, int n_head, int n_kv, int dim,
                 bool pooled) {
  const int group = n_head / n_kv;
  br.rows.clear();
  br.n_rows = pooled ? group : nq * group;
  if (pooled) br.pooled.assign((size_t)n_head * dim, 0.f);
  for (int h = 0; h < n_kv; ++h) {
    if (pooled) {
      for (int j = 0; j < group; ++j) {
        float* mean = br.pooled.data() + ((size_t)h * group + j) * dim;
        for (int i = 0; i < nq; ++i) {
          const float* r = q + ((int64_t)(q_first + i) * n_head + (int64_t)h * group + j) * dim;
          for (int t = 0; t < dim; ++t) mean[t] += r[t];
        }
        for (int t = 0; t < dim; ++t) mean[t] /= (float)nq;
        br.rows.push_back(mean);
      }
    } else {
      for (int i = 0; i < nq; ++i)
        for (int j = 0; j < group; ++j)
          br.rows.push_back(q + ((int64_t)(q_first + i) * n_head + (int64_t)h * group + j) * dim);
    }
  }
}

// A candidate as one integer ordered like the pair (-score, group): best
// score first, ties to the lower group. Sorting integers instead of pairs
// makes the ranking cheap over tens of thousands of groups.
uint64_t rank_key(float score, int64_t G) {
  float neg = -score;
  if (neg == 0.f) neg = 0.f;  // -0 and +0 compare equal as floats
  uint32_t u = std::bit_cast<uint32_t>(neg);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // IEEE order as unsigned order
  return ((uint64_t)u << 32) | (uint64_t)(uint32_t)G;
}
int64_t rank_group(uint64_t key) { return (int64_t)(key & 0xffffffffu); }

// heads=FILE on prompt chunks (decode=dense): a retrieval head of the
// profile reads every page, as DuoAttention's retrieval heads do.
bool retrieval_head_reads_all(const PolicySpec& p, int h, int n_kv_heads) {
  if (!p.decode_dense || p.head_shares.empty() || p.head_layer < 0) return false;
  const size_t i = (size_t)p.head_layer * n_kv_heads + h;
  return i < p.head_shares.size() && p.head_shares[i] > 0.0;
}

// neighbors=...: the groups beside each of the first n_picks ranked ones are
// read too, so a needle sentence cut by a group boundary is read whole.
void read_pick_neighbors(PickNeighbors n, const std::vector<uint64_t>& ranked, int64_t n_picks, int64_t n_groups,
                         std::vector<uint8_t>& chosen) {
  if (n == PickNeighbors::None) return;
  const bool before = n == PickNeighbors::Before || n == PickNeighbors::Both;
  const bool after = n == PickNeighbors::After || n == PickNeighbors::Both;
  for (int64_t i = 0; i < n_picks; ++i) {
    const int64_t G = rank_group(ranked[(size_t)i]);
    if (before && G > 0) chosen[(size_t)G - 1] = 1;
    if (after && G + 1 < n_groups) chosen[(size_t)G + 1] = 1;
  }
}

// Buffers one selection reuses across calls on the same thread (selection
// runs per layer and step; the largest hold a few floats per page).
struct SelectScratch {
  BlockRows br;
  BlockRows sampled;                // estimate=rerank's rows on prompt chunks
  std::vector<float> page_scores;   // [n_kv_heads, n_scored] by logical page
  std::vector<float> group_scores;  // [n_groups] one kv head's
  std::vector<uint64_t> ranked;     // [candidates] rank_key, best first up to the cut
  std::vector<uint8_t> chosen;      // [n_groups]
  std::vector<float> est_fixed, est_ranked, log_keys;
  std::vector<int64_t> shortlist, fixed;  // estimate=rerank's groups
  std::vector<float> exact;               // [shortlist] their stage-2 scores
  RerankScratch rerank;
};

}  // namespace

int64_t topk_mass_picks(double P, const std::vector<float>& est_fixed,
                        const std::vector<float>& est_ranked, int64_t min_picks, int64_t max_picks) {
  max_picks = std::min<int64_t>(max_picks, (int64_t)est_ranked.size());
  min_picks = std::min(min_picks, max_picks);
  float top = -INFINITY;
  for (float e : est_fixed) top = std::max(top, e);
  for (float e : est_ranked) top = std::max(top, e);
  if (!(top > -INFINITY)) return min_picks;
  double fixed = 0, total = 0;
  for (float e : est_fixed) fixed += std::exp((double)e - top);
  total = fixed;
  for (float e : est_ranked) total += std::exp((double)e - top);
  double have = fixed;
  int64_t k = 0;
  for (; k < max_picks && (k < min_picks || have < P * total); ++k)
    have += std::exp((double)est_ranked[(size_t)k] - top);
  return k;
}

TopkSelection select_topk(const PolicySpec& p, const std::vector<int32_t>& page_table, int page_size,
                          int64_t kv_len, int64_t q_pos0, int n_q, int q_block,
                          const PageSummaries& sums, const float* q, int n_head, int n_kv_heads,
                          const TopkColdPages* cold, int n_next, float scale, WorkerScratch* scratch,
                          const std::vector<float>* exact, const KvPool* keys, const PageKeyCodes* key_codes) {
  TopkSelection sel;
  sel.q_block = std::max(1, q_block);
  sel.n_q = n_q;
  sel.q_pos0 = q_pos0;
  sel.n_kv_heads = n_kv_heads;
  sel.head_indptr.assign(1, 0);
  const int n_blocks = n_q <= 0 ? 0 : (n_q + sel.q_block - 1) / sel.q_block;
  const int64_t n_logical =
      std::min<int64_t>((int64_t)page_table.size(), (kv_len + page_size - 1) / page_size);
  const int dim = sums.head_dim();
  // A page is present when the pool or the tier holds it.
  auto present = [&](int64_t L) {
    return page_table[L] >= 0 || (cold && (*cold->tier_key)[L] != 0);
  };
  const float s = scale > 0.f ? scale : 1.f / std::sqrt((float)dim);
  std::optional<SelectScratch> own;
  SelectScratch& x = scratch ? scratch->get<SelectScratch>() : own.emplace();

  for (int b = 0; b < n_blocks; ++b) {
    const int q_first = b * sel.q_block;
    const int nq = std::min(sel.q_block, n_q - q_first);
    const int64_t qa = q_pos0 + q_first, qb = qa + nq - 1;
    const int64_t n_present = std::min<int64_t>(n_logical, qb / page_size + 1);
    const TopkBlockBudget budget = topk_block_budget(p, page_size, n_logical, qa, qb);
    const TopkGeometry& geo = budget.geo;
    const int64_t gp = geo.group_pages;
    const int64_t n_fixed = budget.n_fixed, keep = budget.keep;
    const bool ranks = keep < geo.n_groups || p.mass > 0.0;
    const bool sampled = p.rerank_estimate && p.decode_dense && nq > 1;
    // Page scores of every kv head: the candidates' pages, and under mass=P
    // the fixed groups' too (their estimate). Pool pages in one batched pass;
    // pages in the tier from their kept summaries. A score is the largest
    // exact per-row bound (a per-channel box over the rows is cheaper but
    // looser; it lost passkeys in prefill).
    const int64_t n_scored = !ranks ? 0 : p.mass > 0.0 ? n_present : std::min(n_present, geo.local_from * gp);
    if (ranks) {
      gather_rows(x.br, q, q_first, nq, n_head, n_kv_heads, dim, p.pooled_estimate && nq > 1);
      if (sampled && keys) gather_sampled_rows(x.sampled, q, q_first, nq, n_head, n_kv_heads, dim, p.rerank_rows);
      x.page_scores.resize((size_t)n_kv_heads * n_scored);  // [n_kv_heads, n_scored]
      // Given scores cover every scored page (ceil(kv_len / page_size) per head): no bounds to compute.
      if (!exact)
        max_summary_bounds(x.br.rows.data(), x.br.n_rows, sums.data(), page_table.data(), n_scored,
                           n_kv_heads, dim, x.page_scores.data());
      if (cold)
        for (int64_t L = 0; L < n_scored; ++L) {
          if (page_table[L] >= 0 || (*cold->tier_key)[L] == 0) continue;
          for (int h = 0; h < n_kv_heads; ++h) {
            const float* mn = cold->summaries + ((size_t)L * n_kv_heads + h) * 2 * dim;
            x.page_scores[(size_t)h * n_scored + L] =
                max_summary_bound(x.br.rows.data() + (size_t)h * x.br.n_rows, x.br.n_rows, mn, mn + dim, dim);
          }
        }
      if (exact) {
        const size_t stride = exact->size() / (size_t)n_kv_heads;  // pages per kv head
        for (int h = 0; h < n_kv_heads; ++h)
          for (int64_t L = 0; L < std::min<int64_t>(n_scored, (int64_t)stride); ++L)
            x.page_scores[(size_t)h * n_scored + L] = (*exact)[(size_t)h * stride + L];
      }
      x.log_keys.resize((size_t)gp + 1);
      for (int64_t j = 1; j <= gp; ++j) x.log_keys[(size_t)j] = std::log((float)(j * page_size));
    }
    // The second stage's rows: a prompt chunk's sampled queries (keys past
    // the block's last query count for none of them), else the step's own.
    const BlockRows& exact_rows = sampled ? x.sampled : x.br;
    const int64_t exact_len = sampled ? std::min<int64_t>(kv_len, qb + 1) : kv_len;
    // Ranks the first n_short candidates by their exact scores (stage 2), which land in x.exact.
    auto rerank_top = [&](int h, int64_t n_short) {
      x.shortlist.clear();
      x.fixed.clear();
      for (int64_t i = 0; i < n_short; ++i) x.shortlist.push_back(rank_group(x.ranked[(size_t)i]));
      for (int64_t G = 0; G < geo.n_groups; ++G)
        if (G < geo.n_sink || G >= geo.local_from) x.fixed.push_back(G);
      x.exact.resize(x.shortlist.size());
      rerank_group_scores(*keys, key_codes, page_table, gp, n_present, exact_len,
                          exact_rows.rows.data() + (size_t)h * exact_rows.n_rows, exact_rows.n_rows, h, s,
                          x.shortlist, x.fixed, x.rerank, x.exact.data());
      for (int64_t i = 0; i < n_short; ++i) x.ranked[(size_t)i] = rank_key(x.exact[(size_t)i], x.shortlist[(size_t)i]);
      std::sort(x.ranked.begin(), x.ranked.begin() + n_short);
    };
    // heads=FILE on decode steps: this layer's share of the picks every top-k (layer, kv head) pools.
    std::vector<int64_t> head_picks;
    if (!p.head_shares.empty() && p.mass <= 0.0 && !p.decode_dense) {
      const std::vector<int64_t> all =
          split_head_picks(p.head_shares, keep - n_fixed, std::max<int64_t>(0, geo.local_from - geo.n_sink));
      const size_t row = (size_t)p.head_layer * n_kv_heads;
      if (p.head_layer >= 0 && row + n_kv_heads <= all.size())
        head_picks.assign(all.begin() + (std::ptrdiff_t)row, all.begin() + (std::ptrdiff_t)(row + n_kv_heads));
    }
    for (int h = 0; h < n_kv_heads; ++h) {
      x.chosen.assign(geo.n_groups, 1);
      if (ranks && !retrieval_head_reads_all(p, h, n_kv_heads)) {
        const float* sc = x.page_scores.data() + (size_t)h * n_scored;  // [n_scored]
        // A group's score: its best page's (absent pages score -inf).
        auto group_score = [&](int64_t G) {
          float best = -INFINITY;
          for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) best = std::max(best, sc[L]);
          return best;
        };
        x.ranked.clear();
        x.group_scores.resize(geo.n_groups);
        for (int64_t G = geo.n_sink; G < geo.local_from; ++G) {
          const float best = gp == 1 ? std::max(-INFINITY, sc[G]) : group_score(G);
          x.group_scores[G] = best;
          x.ranked.push_back(rank_key(best, G));
          x.chosen[G] = 0;
        }
        int64_t extra = head_picks.empty() ? keep - n_fixed : head_picks[(size_t)h];
        // Keys are distinct and totally ordered: the first `ranked` after a
        // partition and a sort of them are what a full sort would give.
        const int64_t n_cand = (int64_t)x.ranked.size();
        int64_t ranked = std::min<int64_t>(n_cand, extra + std::max(0, n_next));
        // estimate=rerank: the bound's best shortlist x extra go to the second stage.
        const bool rerank = keys && p.rerank_estimate && extra > 0;
        if (rerank)
          ranked = std::max(ranked, std::min<int64_t>(n_cand, (int64_t)std::ceil(p.shortlist * (double)extra - 1e-9)));
        if (ranked < n_cand) std::nth_element(x.ranked.begin(), x.ranked.begin() + ranked, x.ranked.end());
        std::sort(x.ranked.begin(), x.ranked.begin() + ranked);
        if (rerank && p.mass <= 0.0 && ranked > extra) rerank_top(h, ranked);
        if (p.mass > 0.0) {
          // mass=P: a group's estimated log-mass, as if its keys all scored its bound.
          x.est_fixed.clear();
          x.est_ranked.clear();
          for (int64_t G = 0; G < geo.n_groups; ++G) {
            if (G >= geo.n_sink && G < geo.local_from) continue;
            float best = -INFINITY;
            int64_t keys = 0;
            for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) {
              if (!present(L)) continue;
              best = std::max(best, sc[L]);
              keys += std::max<int64_t>(0, std::min<int64_t>({L * page_size + page_size, kv_len, qb + 1}) - L * page_size);
            }
            x.est_fixed.push_back(keys > 0 ? s * best + std::log((float)keys) : -INFINITY);
          }
          // Candidates are whole groups before the window: every page's keys count.
          for (const uint64_t key : x.ranked) {
            const int64_t G = rank_group(key);
            const float neg = -x.group_scores[G];
            int64_t n_in = 0;
            for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) n_in += present(L);
            x.est_ranked.push_back(n_in > 0 ? -s * neg + x.log_keys[(size_t)n_in] : -INFINITY);
          }
          extra = topk_mass_picks(p.mass, x.est_fixed, x.est_ranked, budget.min_picks, extra);
          // estimate=rerank: the bound's picks x shortlist go to the second
          // stage, and mass=P is then taken over their exact shares.
          if (rerank && extra > 0) {
            const int64_t n_short =
                std::min<int64_t>(ranked, (int64_t)std::ceil(p.shortlist * (double)extra - 1e-9));
            rerank_top(h, n_short);
            std::sort(x.exact.begin(), x.exact.end(), std::greater<float>());
            extra = rerank_mass_picks(p.mass, x.exact, budget.min_picks, std::min(n_short, keep - n_fixed));
          }
        }
        for (int64_t i = 0; i < extra; ++i) x.chosen[rank_group(x.ranked[i])] = 1;
        read_pick_neighbors(p.neighbors, x.ranked, extra, geo.n_groups, x.chosen);
        for (int64_t i = extra; i < std::min<int64_t>(ranked, extra + std::max(0, n_next)); ++i) {
          const int64_t G = rank_group(x.ranked[i]);
          for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L)
            if (present(L)) sel.next_pages.push_back(L);
        }
      }
      for (int64_t G = 0; G < geo.n_groups; ++G) {
        if (!x.chosen[G]) continue;
        for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) {
          if (!present(L)) continue;
          if (std::min<int64_t>(L * page_size + page_size, kv_len) <= L * page_size) continue;  // no key yet
          sel.pages.push_back(L);
        }
      }
      sel.head_indptr.push_back((int32_t)sel.pages.size());
    }
  }
  return sel;
}

Expected<AttentionPlan> topk_plan(const TopkSelection& sel, const std::vector<int32_t>& page_table,
                                  int page_size, int64_t kv_len) {
  AttentionPlan plan;
  plan.q_block = sel.q_block;
  plan.n_q = sel.n_q;
  plan.q_pos0 = sel.q_pos0;
  plan.n_kv_heads = sel.n_kv_heads;
  plan.indptr.assign(1, 0);
  plan.head_indptr.assign(1, 0);
  const int n_kv = sel.n_kv_heads;
  plan.page_ids.reserve(sel.pages.size());
  plan.page_valid.reserve(sel.pages.size());
  plan.page_first.reserve(sel.pages.size());
  plan.page_full.reserve(sel.pages.size());
  for (int b = 0; b < sel.n_blocks(); ++b) {
    const int64_t qa = sel.q_pos0 + (int64_t)b * sel.q_block;
    for (int h = 0; h < n_kv; ++h) {
      for (int32_t e = sel.head_indptr[(size_t)b * n_kv + h]; e < sel.head_indptr[(size_t)b * n_kv + h + 1]; ++e) {
        const int64_t L = sel.pages[(size_t)e];
        if (page_table[L] < 0)
          return Internal("top-k: selected page " + std::to_string(L) + " is not in the pool");
        const int64_t first = L * page_size;
        const int64_t last = std::min<int64_t>(first + page_size, kv_len) - 1;
        plan.page_ids.push_back(page_table[L]);
        plan.page_valid.push_back((int32_t)(last - first + 1));
        plan.page_first.push_back(first);
        plan.page_full.push_back(last <= qa ? 1 : 0);  // causal: the first query sees it all
      }
      plan.head_indptr.push_back((int32_t)plan.page_ids.size());
    }
    plan.indptr.push_back((int32_t)plan.page_ids.size());
  }
  return plan;
}

Expected<AttentionPlan> plan_topk(const PolicySpec& p, const std::vector<int32_t>& page_table, int page_size,
                        int64_t kv_len, int64_t q_pos0, int n_q, int q_block,
                        const PageSummaries& sums, const float* q, int n_head, int n_kv_heads,
                        float scale, WorkerScratch* scratch, const std::vector<float>* exact,
                        const KvPool* keys, const PageKeyCodes* key_codes) {
  return topk_plan(select_topk(p, page_table, page_size, kv_len, q_pos0, n_q, q_block, sums, q,
                               n_head, n_kv_heads, nullptr, 0, scale, scratch, exact, keys, key_codes),
                   page_table, page_size, kv_len);
}

}  // namespace stride
