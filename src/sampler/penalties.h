#pragma once
// Repetition / frequency / presence penalties, split out of Sampler so that
// their exact effect on the logits can be tested.
#include <cstdint>
#include <vector>

#include "sampler/sampler.h"

namespace stride {

struct TokenCount {
  int32_t id;
  int count;
};

// Distinct ids in [0, n_vocab) among the last params.repeat_last_n entries of
// history (< 0: all of it; 0: none), with their counts, ascending by id.
std::vector<TokenCount> recent_token_counts(const SamplingParams& params,
                                            const std::vector<int32_t>& history, int n_vocab);

// The penalized logit of a token seen `count` (> 0) times in the window:
//   repeat_penalty:       logit > 0 ? logit / p : logit * p
//   frequency / presence: minus count * frequency_penalty + presence_penalty
float penalize(const SamplingParams& params, float logit, int count);

// Applies penalize() in place to logits[0, n_vocab) for every recent token.
void apply_penalties(const SamplingParams& params, float* logits, int n_vocab,
                     const std::vector<int32_t>& history);

// True when the params change any logit at all.
bool penalties_active(const SamplingParams& params);

}  // namespace stride
