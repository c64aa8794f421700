#pragma once
// Token sampling: logit bias, greedy, temperature, top-k, top-p, min-p,
// repetition / frequency / presence penalties, with a reproducible seed.
#include <cstdint>
#include <random>
#include <vector>

namespace stride {

// OpenAI's logit_bias: `bias` is added to the token's logit before anything
// else in the chain (greedy included); -100 all but bans it, +100 all but forces it.
struct LogitBias {
  int32_t id = 0;
  float bias = 0.f;
};

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
  std::vector<LogitBias> logit_bias;  // ids outside the vocabulary are ignored
};

// The tokens a draw can choose and their probabilities (summing to 1), in
// no particular order; a certain choice (greedy) is one token of
// probability 1.
struct TokenDistribution {
  std::vector<int32_t> ids;
  std::vector<double> probs;
  double prob_of(int32_t id) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // history: prompt + generated ids so far (penalties look at its tail).
  int32_t sample(const float* logits, int n_vocab, const std::vector<int32_t>& history);
  // The distribution sample() draws from here, without drawing.
  TokenDistribution distribution(const float* logits, int n_vocab, const std::vector<int32_t>& history);
  // A draw from d with this sampler's generator.
  int32_t draw(const TokenDistribution& d);
  // Uniform in [0, 1) from this sampler's generator (speculative acceptance).
  double uniform();
  const SamplingParams& params() const { return params_; }

 private:
  // Fills candidates_[0, n) with the tokens a draw chooses from and their
  // unnormalized weights (summing to *total), returns n. *certain: the
  // choice needs no draw (greedy, or everything masked); it is then
  // candidates_[0] alone.
  size_t weigh(const float* logits, int n_vocab, const std::vector<int32_t>& history, double* total,
               bool* certain);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused scratch
};

// log-softmax of one logit row, for reporting log-probs.
void log_softmax(const float* logits, int n, std::vector<float>& out);
// One entry of it: logit less the row's log_sum_exp (kernels/ops.h).
inline float log_prob(float logit, double log_sum_exp) { return (float)((double)logit - log_sum_exp); }

}  // namespace stride
