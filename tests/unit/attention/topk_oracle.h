#pragma once
// The top-k (Quest) selection written from its definition, for tests: which
// groups of pages one (query block, kv head) reads. Summaries come straight
// from the keys, every row (query x head of the group) gets the exact bound,
// the block's score is the largest; sinks and the local window always count.
// estimate=oracle ranks by exact mass, estimate=rerank re-ranks the bound's
// shortlist by exact mass over the keys it reads.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attention/policy.h"
#include "../kv/cache_test_util.h"

namespace stride::testing_util {

// estimate=rerank's second stage, from its definition: the first n_short
// candidates (by bound) are re-ordered by their share of each row's softmax
// over the keys of the shortlist and the fixed groups (keys in [0, kv_end)
// as the pool stores them, f16), averaged over the rows; their first members
// then hold those shares, best first.
inline void rerank_shortlist(const Shape& s, const std::vector<std::vector<float>>& rows,
                             const std::vector<float>& k, int h, int64_t kv_end, int gp,
                             const std::vector<bool>& fixed, int64_t n_short,
                             std::vector<std::pair<float, int64_t>>& cand) {
  const std::vector<float> kr = f16_round(k);
  const double scale = 1.0 / std::sqrt((double)s.hd);
  const int64_t B = (int64_t)gp * s.page;
  std::vector<int64_t> scored;  // the shortlist, then the fixed groups
  for (int64_t i = 0; i < n_short; ++i) scored.push_back(cand[(size_t)i].second);
  for (int64_t g = 0; g < (int64_t)fixed.size(); ++g)
    if (fixed[(size_t)g]) scored.push_back(g);
  std::vector<double> share((size_t)n_short, 0.0);
  for (const std::vector<float>& r : rows) {
    // e[i]: sum of exp(logit) over group scored[i]'s keys, logits shifted by the row's best.
    std::vector<std::vector<double>> logits;
    double top = -INFINITY;
    for (const int64_t g : scored) {
      logits.emplace_back();
      for (int64_t t = g * B; t < (g + 1) * B && t < kv_end; ++t) {
        double dot = 0;
        for (int c = 0; c < s.hd; ++c) dot += (double)r[c] * kr[((size_t)t * s.n_kv + h) * s.hd + c];
        logits.back().push_back(scale * dot);
        top = std::max(top, scale * dot);
      }
    }
    std::vector<double> e(scored.size(), 0.0);
    double total = 0;
    for (size_t i = 0; i < scored.size(); ++i) {
      for (const double l : logits[i]) e[i] += std::exp(l - top);
      total += e[i];
    }
    for (int64_t i = 0; i < n_short; ++i) share[(size_t)i] += e[(size_t)i] / total / (double)rows.size();
  }
  std::vector<std::pair<double, int64_t>> order;
  for (int64_t i = 0; i < n_short; ++i) order.push_back({share[(size_t)i], cand[(size_t)i].second});
  std::sort(order.begin(), order.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (int64_t i = 0; i < n_short; ++i) cand[(size_t)i] = {(float)order[(size_t)i].first, order[(size_t)i].second};
}

// q: [n_tok, n_head, hd], k: [n_tok, n_kv, hd]. Returns [groups] read by the
// block of nq queries at qa, kv head h. kv_end: keys written when the block
// selects (the end of its chunk; a page's summary covers them); 0: qa + nq.
inline std::vector<bool> topk_oracle_selection(const PolicySpec& pol, const Shape& s,
                                               const std::vector<float>& q, const std::vector<float>& k,
                                               int64_t qa, int nq, int h, int64_t kv_end = 0) {
  const int gp = pol.block > 0 ? (int)(pol.block / s.page) : 1;
  const int64_t B = (int64_t)gp * s.page, qb = qa + nq - 1;
  const int64_t n_groups = qb / B + 1;
  const int group = s.n_head / s.n_kv;
  std::vector<bool> keep(n_groups, false);
  // heads=FILE on prompt chunks (decode=dense): a retrieval head (profile
  // share > 0) reads every group.
  const size_t head_entry = (size_t)pol.head_layer * s.n_kv + h;
  if (pol.decode_dense && pol.head_layer >= 0 && head_entry < pol.head_shares.size() &&
      pol.head_shares[head_entry] > 0)
    return std::vector<bool>(n_groups, true);
  const int64_t n_sink = std::min(n_groups, pol.sinks > 0 ? (pol.sinks + B - 1) / B : 1);
  const int64_t win = pol.window > 0 ? pol.window : B;
  const int64_t local_from = std::min(n_groups, std::max<int64_t>(0, qa - win + 1) / B);
  for (int64_t g = 0; g < n_groups; ++g) keep[g] = g < n_sink || g >= local_from;
  int64_t fixed = 0;
  for (bool b : keep) fixed += b;
  int64_t budget =
      std::min(n_groups, std::max(fixed, (int64_t)std::ceil((1 - pol.sparsity) * n_groups - 1e-9)));
  if (kv_end <= 0) kv_end = qb + 1;
  // The rows scored: every query of the block x the group's heads, or under
  // a pooled estimate each head's mean query over the block.
  std::vector<std::vector<float>> rows;
  for (int j = 0; j < group; ++j) {
    if (pol.pooled_estimate && nq > 1) {
      std::vector<float> mean(s.hd, 0.f);
      for (int i = 0; i < nq; ++i)
        for (int c = 0; c < s.hd; ++c) mean[c] += q[((size_t)(qa + i) * s.n_head + h * group + j) * s.hd + c];
      for (float& x : mean) x /= (float)nq;
      rows.push_back(mean);
    } else {
      for (int i = 0; i < nq; ++i) {
        const float* r = q.data() + ((size_t)(qa + i) * s.n_head + h * group + j) * s.hd;
        rows.emplace_back(r, r + s.hd);
      }
    }
  }
  // The group's bound: the best row's over the summaries of its pages.
  auto group_bound = [&](int64_t g) {
    float best = -INFINITY;
    for (int64_t L = g * gp; L < (g + 1) * gp; ++L) {
      if (L * s.page >= kv_end || L * s.page > qb) continue;  // no key the block sees
      std::vector<float> mn(s.hd, INFINITY), mx(s.hd, -INFINITY);
      for (int64_t t = L * s.page; t < (L + 1) * s.page && t < kv_end; ++t)
        for (int c = 0; c < s.hd; ++c) {
          const float x = k[((size_t)t * s.n_kv + h) * s.hd + c];
          mn[c] = std::min(mn[c], x);
          mx[c] = std::max(mx[c], x);
        }
      for (const std::vector<float>& r : rows) {
        float bound = 0;
        for (int c = 0; c < s.hd; ++c) bound += std::max(r[c] * mn[c], r[c] * mx[c]);
        best = std::max(best, bound);
      }
    }
    return best;
  };
  // estimate=oracle: a page's score is its exact softmax mass, averaged over
  // the rows, with every key in [0, kv_end) visible (decode); a group's is its best page's.
  std::vector<double> page_mass;
  if (pol.oracle_estimate) {
    const std::vector<float> kr = f16_round(k);  // what the pool stores
    const double scale = 1.0 / std::sqrt((double)s.hd);
    page_mass.assign((size_t)((kv_end + s.page - 1) / s.page), 0.0);
    for (const std::vector<float>& r : rows) {
      std::vector<double> e((size_t)kv_end);
      double top = -INFINITY, sum = 0;
      for (int64_t t = 0; t < kv_end; ++t) {
        double dot = 0;
        for (int c = 0; c < s.hd; ++c) dot += (double)r[c] * kr[((size_t)t * s.n_kv + h) * s.hd + c];
        top = std::max(top, e[(size_t)t] = scale * dot);
      }
      for (double& x : e) sum += (x = std::exp(x - top));
      for (int64_t t = 0; t < kv_end; ++t) page_mass[(size_t)(t / s.page)] += e[(size_t)t] / sum / rows.size();
    }
  }
  auto group_score = [&](int64_t g) {
    if (!pol.oracle_estimate) return group_bound(g);
    float best = -INFINITY;
    for (int64_t L = g * gp; L < (g + 1) * gp && L < (int64_t)page_mass.size(); ++L)
      best = std::max(best, (float)page_mass[(size_t)L]);
    return best;
  };
  std::vector<std::pair<float, int64_t>> cand;
  for (int64_t g = n_sink; g < local_from; ++g) cand.push_back({group_score(g), g});
  std::sort(cand.begin(), cand.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  // The shortlist of the budget's picks: ceil(shortlist x picks) candidates.
  auto n_shortlist = [&](int64_t picks) {
    return std::min<int64_t>((int64_t)cand.size(), (int64_t)std::ceil(pol.shortlist * picks - 1e-9));
  };
  // On prompt chunks (decode=dense) the second stage scores, of the block's
  // queries, the last and up to n - 1 more at an even stride nq / n before it
  // (n: rows=N, default 4), each with every head of the group, over keys up
  // to the block's last query.
  std::vector<std::vector<float>> exact_rows = rows;
  int64_t exact_end = kv_end;
  if (pol.rerank_estimate && pol.decode_dense && nq > 1) {
    exact_rows.clear();
    const int n_pick = (int)std::min<int64_t>(nq, pol.rerank_rows > 0 ? pol.rerank_rows : 4);
    for (int j = 0; j < n_pick; ++j)
      for (int g = 0; g < group; ++g) {
        const float* r = q.data() + ((size_t)(qb - j * (nq / n_pick)) * s.n_head + h * group + g) * s.hd;
        exact_rows.emplace_back(r, r + s.hd);
      }
    exact_end = std::min(kv_end, qb + 1);
  }
  if (pol.rerank_estimate && pol.mass <= 0 && budget - fixed > 0 && n_shortlist(budget - fixed) > budget - fixed)
    rerank_shortlist(s, exact_rows, k, h, exact_end, gp, keep, n_shortlist(budget - fixed), cand);
  if (pol.mass > 0) {
    // Top-p over masses keys * exp(scale * bound) of every group, fixed ones
    // counted first, candidates best first, between min and max tokens.
    const double scale = 1.0 / std::sqrt((double)s.hd);
    auto mass = [&](int64_t g) {
      const int64_t keys = std::min<int64_t>((g + 1) * B, qb + 1) - g * B;
      return (double)keys * std::exp(scale * (double)group_bound(g));
    };
    double have = 0, total = 0;
    for (int64_t g = 0; g < n_groups; ++g) {
      total += mass(g);
      if (keep[g]) have += mass(g);
    }
    const int64_t cap = pol.max_tokens > 0 ? (pol.max_tokens + B - 1) / B : n_groups;
    const int64_t max_picks = std::min<int64_t>((int64_t)cand.size(), cap);
    const int64_t min_picks = std::min<int64_t>(max_picks, (pol.min_tokens + B - 1) / B);
    int64_t picks = 0;
    while (picks < max_picks && (picks < min_picks || have < pol.mass * total))
      have += mass(cand[(size_t)picks++].second);
    if (pol.rerank_estimate && picks > 0) {
      // The shortlist's exact shares, best first; the fixed groups hold the rest of each row's mass.
      const int64_t n_short = n_shortlist(picks);
      rerank_shortlist(s, exact_rows, k, h, exact_end, gp, keep, n_short, cand);
      double share = 1;
      for (int64_t i = 0; i < n_short; ++i) share -= cand[(size_t)i].first;
      const int64_t top = std::min(n_short, max_picks);
      picks = 0;
      while (picks < top && (picks < std::min(min_picks, top) || share < pol.mass)) share += cand[(size_t)picks++].first;
    }
    budget = fixed + picks;
  }
  for (int64_t i = 0; i < budget - fixed; ++i) keep[cand[i].second] = true;
  return keep;
}

}  // namespace stride::testing_util
