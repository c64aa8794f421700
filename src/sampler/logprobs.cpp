#include "sampler/logprobs.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "sampler/sampler.h"

namespace stride {

TokenLogprob token_logprobs(const float* logits, int n_vocab, int32_t id, int top) {
  TokenLogprob t;
  t.id = id;
  const int k = std::clamp(top, 0, n_vocab);
  if (k == 0) {  // every decode step asks this much: one pass, nothing the size of the vocabulary
    t.logprob = log_prob(logits[id], log_sum_exp(logits, n_vocab));
    return t;
  }
  std::vector<float> lp;
  log_softmax(logits, n_vocab, lp);
  t.logprob = lp[(size_t)id];
  std::vector<int32_t> order((size_t)n_vocab);
  for (int i = 0; i < n_vocab; ++i) order[(size_t)i] = i;
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return lp[(size_t)a] > lp[(size_t)b]; });
  // Tokens a grammar masked (-inf) cannot be drawn: they are no alternatives.
  for (int i = 0; i < k && std::isfinite(lp[(size_t)order[(size_t)i]]); ++i) {
    t.top.push_back({order[(size_t)i], lp[(size_t)order[(size_t)i]]});
  }
  return t;
}

}  // namespace stride
