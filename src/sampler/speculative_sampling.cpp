#include "sampler/speculative_sampling.h"

#include <algorithm>
#include <unordered_map>

namespace stride {

TokenDistribution residual_distribution(const TokenDistribution& p, int32_t draft, const TokenDistribution* q) {
  std::unordered_map<int32_t, double> q_of;
  if (q) {
    q_of.reserve(q->ids.size());
    for (size_t i = 0; i < q->ids.size(); ++i) q_of[q->ids[i]] = q->probs[i];
  } else {
    q_of[draft] = 1.0;
  }
  TokenDistribution r;
  double total = 0.0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    const auto it = q_of.find(p.ids[i]);
    const double rest = std::max(0.0, p.probs[i] - (it == q_of.end() ? 0.0 : it->second));
    if (rest <= 0.0) continue;
    r.ids.push_back(p.ids[i]);
    r.probs.push_back(rest);
    total += rest;
  }
  if (total <= 0.0) return p;
  for (double& x : r.probs) x /= total;
  return r;
}

DraftVerdict verify_draft_token(const TokenDistribution& p, int32_t draft, const TokenDistribution* q, Sampler& rng) {
  const double px = p.prob_of(draft);
  const double qx = q ? q->prob_of(draft) : 1.0;
  bool accept = false;
  if (px > 0.0) {
    // A draft the draft distribution could not have produced (qx == 0) is
    // still judged by p alone, as a point mass would be.
    const double ratio = qx > 0.0 ? px / qx : px;
    accept = ratio >= 1.0 || rng.uniform() < ratio;
  }
  if (accept) return {true, draft};
  return {false, rng.draw(residual_distribution(p, draft, q))};
}

}  // namespace stride
