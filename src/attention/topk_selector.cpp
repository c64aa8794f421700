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
#include "attention/topk_select_head.h"
#include "core/thread_pool.h"
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

// Buffers one selection reuses across calls on the same thread (selection
// runs per layer and step; the largest hold a few floats per page).
struct SelectScratch {
  BlockRows br;
  BlockRows sampled;                // estimate=rerank's rows on prompt chunks
  std::vector<float> page_scores;   // [n_kv_heads, n_scored] by logical page
  std::vector<float> log_keys;      // [group_pages + 1]
  std::vector<std::vector<int64_t>> head_pages, head_next;  // [n_kv_heads] a parallel selection's lists
};

// Pages a pool's thread scores at least: fewer cost less than waking it.
constexpr int64_t kBoundPagesPerThread = 64;

// The bounds of pages [0, n) of every kv head (max_summary_bounds), split
// by pages over the pool's threads when there are enough.
//   out: [n_kv, n]
void page_bounds(const BlockRows& br, const PageSummaries& sums, const std::vector<int32_t>& page_table, int64_t n,
                 int n_kv, float* out, ThreadPool* threads) {
  const int dim = sums.head_dim();
  if (!threads || threads->size() < 2 || n < 2 * kBoundPagesPerThread) {
    max_summary_bounds(br.rows.data(), br.n_rows, sums.data(), page_table.data(), n, n_kv, dim, out);
    return;
  }
  threads->parallel_for(n, kBoundPagesPerThread, [&](int64_t a, int64_t b) {
    max_summary_bounds(br.rows.data(), br.n_rows, sums.data(), page_table.data() + a, b - a, n_kv, dim, out + a, n);
  });
}

// Every kv head's pages of one block, appended to sel in head order. With a
// pool, heads whose selection reads keys run on its threads, each into its
// own lists, which join in head order: the same selection as one thread's.
void select_block_heads(const TopkBlockInputs& in, ThreadPool* threads, WorkerScratch* scratch, SelectScratch& x,
                        TopkSelection& sel) {
  const int n_kv = in.n_kv_heads;
  if (!threads || threads->size() < 2 || !head_selection_is_heavy(in)) {
    std::optional<TopkHeadScratch> own;
    TopkHeadScratch& hx = scratch ? scratch->get<TopkHeadScratch>() : own.emplace();
    for (int h = 0; h < n_kv; ++h) {
      select_head_pages(in, h, hx, sel.pages, sel.next_pages);
      sel.head_indptr.push_back((int32_t)sel.pages.size());
    }
    return;
  }
  x.head_pages.resize((size_t)n_kv);
  x.head_next.resize((size_t)n_kv);
  threads->run_chunks(n_kv, [&](int h, int, int worker) {
    x.head_pages[(size_t)h].clear();
    x.head_next[(size_t)h].clear();
    select_head_pages(in, h, threads->scratch(worker).get<TopkHeadScratch>(), x.head_pages[(size_t)h],
                      x.head_next[(size_t)h]);
  });
  for (int h = 0; h < n_kv; ++h) {
    sel.pages.insert(sel.pages.end(), x.head_pages[(size_t)h].begin(), x.head_pages[(size_t)h].end());
    sel.next_pages.insert(sel.next_pages.end(), x.head_next[(size_t)h].begin(), x.head_next[(size_t)h].end());
    sel.head_indptr.push_back((int32_t)sel.pages.size());
  }
}

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
                          const std::vector<float>* exact, const KvPool* keys, const PageKeyCodes* key_codes,
                          ThreadPool* threads) {
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
      if (!exact) page_bounds(x.br, sums, page_table, n_scored, n_kv_heads, x.page_scores.data(), threads);
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
    // heads=FILE on decode steps: this layer's share of the picks every top-k (layer, kv head) pools.
    std::vector<int64_t> head_picks;
    if (!p.head_shares.empty() && p.mass <= 0.0 && !p.decode_dense) {
      const std::vector<int64_t> all =
          split_head_picks(p.head_shares, keep - n_fixed, std::max<int64_t>(0, geo.local_from - geo.n_sink));
      const size_t row = (size_t)p.head_layer * n_kv_heads;
      if (p.head_layer >= 0 && row + n_kv_heads <= all.size())
        head_picks.assign(all.begin() + (std::ptrdiff_t)row, all.begin() + (std::ptrdiff_t)(row + n_kv_heads));
    }
    // The second stage's rows: a prompt chunk's sampled queries (keys past
    // the block's last query count for none of them), else the step's own.
    const BlockRows& exact_rows = sampled ? x.sampled : x.br;
    const TopkBlockInputs in{.policy = &p, .budget = budget, .ranks = ranks, .n_present = n_present,
                             .n_scored = n_scored, .kv_len = kv_len, .q_last = qb, .page_size = page_size,
                             .n_kv_heads = n_kv_heads, .n_next = n_next, .scale = s, .page_table = &page_table,
                             .cold = cold, .page_scores = x.page_scores.data(), .log_keys = x.log_keys.data(),
                             .head_picks = &head_picks, .keys = keys, .key_codes = key_codes,
                             .exact_rows = exact_rows.rows.data(), .n_exact_rows = exact_rows.n_rows,
                             .exact_len = sampled ? std::min<int64_t>(kv_len, qb + 1) : kv_len};
    select_block_heads(in, threads, scratch, x, sel);
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
                        const KvPool* keys, const PageKeyCodes* key_codes, ThreadPool* threads) {
  return topk_plan(select_topk(p, page_table, page_size, kv_len, q_pos0, n_q, q_block, sums, q,
                               n_head, n_kv_heads, nullptr, 0, scale, scratch, exact, keys, key_codes, threads),
                   page_table, page_size, kv_len);
}

}  // namespace stride
