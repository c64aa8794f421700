#include "sampler/logprobs.h"

#include <algorithm>
#include <cmath>

#include "sampler/sampler.h"

namespace stride {

TokenLogprob token_logprobs(const float* logits, int n_vocab, int32_t id, int top) {
  std::vector<float> lp;
  log_softmax(logits, n_vocab, lp);
  TokenLogprob t;
  t.id = id;
  t.logprob = lp[(size_t)id];
  const int k = std::clamp(top, 0, n_vocab);
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
