#include "model/moe_router.h"

#include <cmath>

namespace stride {

void route_one(const MoeConfig& c, const float* logits, int32_t* expert, float* weight) {
  const int k = c.n_expert_used;
  // Insertion into the k best so far; the softmax keeps the logits' order.
  int found = 0;
  for (int e = 0; e < c.n_expert; ++e) {
    int at = found < k ? found : k;
    while (at > 0 && logits[e] > logits[expert[at - 1]]) --at;
    if (at >= k) continue;
    for (int j = (found < k ? found : k - 1); j > at; --j) expert[j] = expert[j - 1];
    expert[at] = e;
    if (found < k) ++found;
  }
  const float top = logits[expert[0]];
  double chosen = 0;
  for (int j = 0; j < k; ++j) chosen += std::exp((double)logits[expert[j]] - top);
  double denom = chosen;  // renormalised, or a softmax over the chosen logits
  if (c.gating == MoeGating::SoftmaxThenTopK && !c.norm_topk_prob) {
    denom = 0;
    for (int e = 0; e < c.n_expert; ++e) denom += std::exp((double)logits[e] - top);
  }
  for (int j = 0; j < k; ++j) weight[j] = (float)(std::exp((double)logits[expert[j]] - top) / denom);
}

void route_tokens(const MoeConfig& c, const float* logits, int n, MoeRouting& out) {
  const int k = c.n_expert_used;
  out.k = k;
  out.expert.resize((size_t)n * k);
  out.weight.resize((size_t)n * k);
  for (int t = 0; t < n; ++t) {
    route_one(c, logits + (int64_t)t * c.n_expert, out.expert.data() + (int64_t)t * k,
              out.weight.data() + (int64_t)t * k);
  }
}

}  // namespace stride
