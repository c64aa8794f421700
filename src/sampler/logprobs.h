#pragma once
// Log-probabilities of a sampled token and its best alternatives, as the
// OpenAI API reports them (`logprobs`, `top_logprobs`).
#include <cstdint>
#include <vector>

namespace stride {

struct TopLogprob {
  int32_t id = 0;
  float logprob = 0.f;
};

// Log-prob of one generated token and its best alternatives.
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.f;
  std::vector<TopLogprob> top;  // [top] most likely first
};

// logits: [n_vocab]; top: alternatives to list (at most n_vocab).
TokenLogprob token_logprobs(const float* logits, int n_vocab, int32_t id, int top);

}  // namespace stride
