// Penalties over the recent history (llama.cpp repeat penalty, OpenAI
// frequency/presence penalties).
#include "sampler/penalties.h"

#include <algorithm>

namespace stride {

bool penalties_active(const SamplingParams& params) {
  return params.repeat_last_n != 0 &&
         (params.repeat_penalty != 1.0f || params.frequency_penalty != 0.0f ||
          params.presence_penalty != 0.0f);
}

std::vector<TokenCount> recent_token_counts(const SamplingParams& params,
                                            const std::vector<int32_t>& history, int n_vocab) {
  std::vector<TokenCount> counts;
  if (params.repeat_last_n == 0 || history.empty()) return counts;
  const size_t window = params.repeat_last_n < 0
                            ? history.size()
                            : std::min(history.size(), (size_t)params.repeat_last_n);
  // The window is small (tens of tokens): sorting a copy gives counts without
  // an O(n_vocab) table.
  std::vector<int32_t> recent(history.end() - (std::ptrdiff_t)window, history.end());
  std::sort(recent.begin(), recent.end());
  for (size_t i = 0; i < recent.size();) {
    size_t j = i;
    while (j < recent.size() && recent[j] == recent[i]) ++j;
    if (recent[i] >= 0 && recent[i] < n_vocab) counts.push_back({recent[i], (int)(j - i)});
    i = j;
  }
  return counts;
}

float penalize(const SamplingParams& params, float logit, int count) {
  if (count <= 0) return logit;
  if (params.repeat_penalty != 1.0f) {
    logit = logit > 0.0f ? logit / params.repeat_penalty : logit * params.repeat_penalty;
  }
  return logit - ((float)count * params.frequency_penalty + params.presence_penalty);
}

void apply_penalties(const SamplingParams& params, float* logits, int n_vocab,
                     const std::vector<int32_t>& history) {
  if (!penalties_active(params)) return;
  for (const TokenCount& tc : recent_token_counts(params, history, n_vocab)) {
    logits[tc.id] = penalize(params, logits[tc.id], tc.count);
  }
}

}  // namespace stride
