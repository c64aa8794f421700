#include "attention/topk_select_head.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

namespace stride {

namespace {

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

// A page is present when the pool or the tier holds it.
bool present(const TopkBlockInputs& in, int64_t L) {
  return (*in.page_table)[(size_t)L] >= 0 || (in.cold && (*in.cold->tier_key)[(size_t)L] != 0);
}

// Ranks the first n_short candidates by their exact scores (stage 2), which land in x.exact.
void rerank_top(const TopkBlockInputs& in, int h, int64_t n_short, TopkHeadScratch& x) {
  const TopkGeometry& geo = in.budget.geo;
  x.shortlist.clear();
  x.fixed.clear();
  for (int64_t i = 0; i < n_short; ++i) x.shortlist.push_back(rank_group(x.ranked[(size_t)i]));
  for (int64_t G = 0; G < geo.n_groups; ++G)
    if (G < geo.n_sink || G >= geo.local_from) x.fixed.push_back(G);
  x.exact.resize(x.shortlist.size());
  rerank_group_scores(*in.keys, in.key_codes, *in.page_table, geo.group_pages, in.n_present, in.exact_len,
                      in.exact_rows + (size_t)h * in.n_exact_rows, in.n_exact_rows, h, in.scale, x.shortlist,
                      x.fixed, x.rerank, x.exact.data());
  for (int64_t i = 0; i < n_short; ++i) x.ranked[(size_t)i] = rank_key(x.exact[(size_t)i], x.shortlist[(size_t)i]);
  std::sort(x.ranked.begin(), x.ranked.begin() + n_short);
}

// mass=P: how many of the ranked candidates to read, from each group's
// estimated log-mass (as if its keys all scored its bound), or from the
// second stage's shares under estimate=rerank.
int64_t mass_picks(const TopkBlockInputs& in, int h, const float* sc, int64_t extra, int64_t ranked, bool rerank,
                   TopkHeadScratch& x) {
  const PolicySpec& p = *in.policy;
  const TopkGeometry& geo = in.budget.geo;
  const int64_t gp = geo.group_pages, n_present = in.n_present;
  x.est_fixed.clear();
  x.est_ranked.clear();
  for (int64_t G = 0; G < geo.n_groups; ++G) {
    if (G >= geo.n_sink && G < geo.local_from) continue;
    float best = -INFINITY;
    int64_t keys = 0;
    for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) {
      if (!present(in, L)) continue;
      best = std::max(best, sc[L]);
      keys += std::max<int64_t>(
          0, std::min<int64_t>({L * in.page_size + in.page_size, in.kv_len, in.q_last + 1}) - L * in.page_size);
    }
    x.est_fixed.push_back(keys > 0 ? in.scale * best + std::log((float)keys) : -INFINITY);
  }
  // Candidates are whole groups before the window: every page's keys count.
  for (const uint64_t key : x.ranked) {
    const int64_t G = rank_group(key);
    const float neg = -x.group_scores[(size_t)G];
    int64_t n_in = 0;
    for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L) n_in += present(in, L);
    x.est_ranked.push_back(n_in > 0 ? -in.scale * neg + in.log_keys[(size_t)n_in] : -INFINITY);
  }
  extra = topk_mass_picks(p.mass, x.est_fixed, x.est_ranked, in.budget.min_picks, extra);
  // estimate=rerank: the bound's picks x shortlist go to the second
  // stage, and mass=P is then taken over their exact shares.
  if (rerank && extra > 0) {
    const int64_t n_short = std::min<int64_t>(ranked, (int64_t)std::ceil(p.shortlist * (double)extra - 1e-9));
    rerank_top(in, h, n_short, x);
    std::sort(x.exact.begin(), x.exact.end(), std::greater<float>());
    extra = rerank_mass_picks(p.mass, x.exact, in.budget.min_picks, std::min(n_short, in.budget.keep - in.budget.n_fixed));
  }
  return extra;
}

// Marks the groups kv head h picks by score in x.chosen; the next ones go to next_pages.
void pick_groups(const TopkBlockInputs& in, int h, TopkHeadScratch& x, std::vector<int64_t>& next_pages) {
  const PolicySpec& p = *in.policy;
  const TopkGeometry& geo = in.budget.geo;
  const int64_t gp = geo.group_pages, n_present = in.n_present;
  const float* sc = in.page_scores + (size_t)h * in.n_scored;  // [n_scored]
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
    x.group_scores[(size_t)G] = best;
    x.ranked.push_back(rank_key(best, G));
    x.chosen[(size_t)G] = 0;
  }
  int64_t extra = in.head_picks->empty() ? in.budget.keep - in.budget.n_fixed : (*in.head_picks)[(size_t)h];
  // Keys are distinct and totally ordered: the first `ranked` after a
  // partition and a sort of them are what a full sort would give.
  const int64_t n_cand = (int64_t)x.ranked.size();
  const int n_next = std::max(0, in.n_next);
  int64_t ranked = std::min<int64_t>(n_cand, extra + n_next);
  // estimate=rerank: the bound's best shortlist x extra go to the second stage.
  const bool rerank = in.keys && p.rerank_estimate && extra > 0;
  if (rerank)
    ranked = std::max(ranked, std::min<int64_t>(n_cand, (int64_t)std::ceil(p.shortlist * (double)extra - 1e-9)));
  if (ranked < n_cand) std::nth_element(x.ranked.begin(), x.ranked.begin() + ranked, x.ranked.end());
  std::sort(x.ranked.begin(), x.ranked.begin() + ranked);
  if (rerank && p.mass <= 0.0 && ranked > extra) rerank_top(in, h, ranked, x);
  if (p.mass > 0.0) extra = mass_picks(in, h, sc, extra, ranked, rerank, x);
  for (int64_t i = 0; i < extra; ++i) x.chosen[(size_t)rank_group(x.ranked[(size_t)i])] = 1;
  read_pick_neighbors(p.neighbors, x.ranked, extra, geo.n_groups, x.chosen);
  for (int64_t i = extra; i < std::min<int64_t>(ranked, extra + n_next); ++i) {
    const int64_t G = rank_group(x.ranked[(size_t)i]);
    for (int64_t L = G * gp; L < std::min(n_present, (G + 1) * gp); ++L)
      if (present(in, L)) next_pages.push_back(L);
  }
}

}  // namespace

void select_head_pages(const TopkBlockInputs& in, int h, TopkHeadScratch& x, std::vector<int64_t>& pages,
                       std::vector<int64_t>& next_pages) {
  const TopkGeometry& geo = in.budget.geo;
  const int64_t gp = geo.group_pages;
  x.chosen.assign((size_t)geo.n_groups, 1);
  if (in.ranks && !retrieval_head_reads_all(*in.policy, h, in.n_kv_heads)) pick_groups(in, h, x, next_pages);
  for (int64_t G = 0; G < geo.n_groups; ++G) {
    if (!x.chosen[(size_t)G]) continue;
    for (int64_t L = G * gp; L < std::min(in.n_present, (G + 1) * gp); ++L) {
      if (!present(in, L)) continue;
      if (std::min<int64_t>(L * in.page_size + in.page_size, in.kv_len) <= L * in.page_size) continue;  // no key yet
      pages.push_back(L);
    }
  }
}

bool head_selection_is_heavy(const TopkBlockInputs& in) {
  return in.ranks && in.keys && in.policy->rerank_estimate && in.n_kv_heads > 1;
}

}  // namespace stride
