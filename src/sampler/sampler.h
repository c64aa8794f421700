#pragma once
// Token sampling: greedy, temperature, top-k, top-p, min-p, repetition /
// frequency / presence penalties, with a reproducible seed.
#include <cstdint>
#include <random>
#include <vector>

namespace stride {

struct SamplingParams {
  float temperature = 0.8f;  // <= 0: greedy (argmax)
  int top_k = 40;            // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  float repeat_penalty = 1.0f;     // llama.cpp-style, over the last repeat_last_n tokens
  int repeat_last_n = 64;
  float frequency_penalty = 0.0f;  // OpenAI-style
  float presence_penalty = 0.0f;
  uint64_t seed = 0xC0FFEE;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // history: prompt + generated ids so far (penalties look at its tail).
  int32_t sample(const float* logits, int n_vocab, const std::vector<int32_t>& history);
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused scratch
};

// log-softmax of one logit row, for reporting log-probs.
void log_softmax(const float* logits, int n, std::vector<float>& out);

}  // namespace stride
