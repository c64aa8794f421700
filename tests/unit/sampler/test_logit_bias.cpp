// logit_bias against a scalar reference: the distribution a draw uses is
// softmax((logits + bias) / T), greedy is the argmax of the biased logits, a
// masked token stays masked, and an id outside the vocabulary changes nothing.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sampler/sampler.h"

namespace stride {
namespace {

SamplingParams plain(float temperature, std::vector<LogitBias> bias) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.logit_bias = std::move(bias);
  return p;
}

std::vector<float> random_logits(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v((size_t)n);
  for (float& x : v) x = d(rng);
  return v;
}

// softmax((logits + bias) / T) in double, written out directly.
std::vector<double> reference(std::vector<float> logits, const std::vector<LogitBias>& bias, double t) {
  for (const LogitBias& b : bias) logits[(size_t)b.id] += b.bias;
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : logits) mx = std::max(mx, (double)x);
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(((double)logits[i] - mx) / t);
  for (double& x : p) x /= sum;
  return p;
}

TEST(LogitBias, DistributionIsSoftmaxOfBiasedLogits) {
  const auto logits = random_logits(500, 3);
  const std::vector<LogitBias> bias = {{7, 3.5f}, {42, -2.0f}, {499, 10.0f}, {0, -100.0f}};
  for (const float t : {0.7f, 1.0f, 1.6f}) {
    Sampler s(plain(t, bias));
    const TokenDistribution d = s.distribution(logits.data(), (int)logits.size(), {});
    const auto want = reference(logits, bias, t);
    ASSERT_EQ(d.ids.size(), logits.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(d.prob_of((int32_t)i), want[i], 1e-6) << "id " << i;
  }
}

TEST(LogitBias, GreedyTakesTheSecondChoiceWhenTheFirstIsBanned) {
  const auto logits = random_logits(2000, 11);
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = (int)i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[(size_t)a] > logits[(size_t)b]; });
  EXPECT_EQ(Sampler(plain(0.0f, {})).sample(logits.data(), 2000, {}), order[0]);
  EXPECT_EQ(Sampler(plain(0.0f, {{order[0], -100.0f}})).sample(logits.data(), 2000, {}), order[1]);
  // +100 forces the least likely token.
  EXPECT_EQ(Sampler(plain(0.0f, {{order.back(), 100.0f}})).sample(logits.data(), 2000, {}), order.back());
}

TEST(LogitBias, AMaskedTokenStaysMasked) {
  std::vector<float> logits = {1.0f, 2.0f, -std::numeric_limits<float>::infinity(), 0.5f};
  Sampler s(plain(1.0f, {{2, 100.0f}}));
  const TokenDistribution d = s.distribution(logits.data(), 4, {});
  EXPECT_EQ(d.prob_of(2), 0.0);
  EXPECT_NE(Sampler(plain(0.0f, {{2, 100.0f}})).sample(logits.data(), 4, {}), 2);
}

TEST(LogitBias, IdsOutsideTheVocabularyChangeNothing) {
  const auto logits = random_logits(64, 5);
  Sampler a(plain(1.0f, {})), b(plain(1.0f, {{64, 100.0f}, {-1, 100.0f}}));
  const auto da = a.distribution(logits.data(), 64, {}), db = b.distribution(logits.data(), 64, {});
  for (int32_t i = 0; i < 64; ++i) EXPECT_DOUBLE_EQ(da.prob_of(i), db.prob_of(i));
}

}  // namespace
}  // namespace stride
