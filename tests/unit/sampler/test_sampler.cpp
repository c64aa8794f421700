// Sampler chain: greedy, seeding, top-k / top-p / min-p, temperature, and the
// empirical distribution of draws.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "sampler/logprobs.h"
#include "sampler/sampler.h"

namespace stride {
namespace {

SamplingParams plain(float temperature, uint64_t seed = 1234) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<float> random_logits(int n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

int argmax(const std::vector<float>& v) {
  return (int)(std::max_element(v.begin(), v.end()) - v.begin());  // first max: lowest id
}

std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, int draws) {
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) f[s.sample(logits.data(), (int)logits.size(), {})] += 1.0;
  for (double& x : f) x /= draws;
  return f;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  for (uint32_t seed = 0; seed < 5; ++seed) {
    const auto logits = random_logits(49152, 3.0f, seed);
    Sampler s(plain(0.0f));
    EXPECT_EQ(s.sample(logits.data(), (int)logits.size(), {}), argmax(logits));
  }
  const std::vector<float> tied = {1.0f, 5.0f, 2.0f, 5.0f, 5.0f};
  EXPECT_EQ(Sampler(plain(0.0f)).sample(tied.data(), 5, {}), 1);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDiffers) {
  const auto logits = random_logits(1000, 1.0f, 7);
  Sampler a(plain(1.0f, 42)), b(plain(1.0f, 42)), c(plain(1.0f, 43));
  int differ = 0;
  for (int i = 0; i < 300; ++i) {
    const int32_t ta = a.sample(logits.data(), 1000, {});
    EXPECT_EQ(ta, b.sample(logits.data(), 1000, {}));
    differ += ta != c.sample(logits.data(), 1000, {});
  }
  EXPECT_GT(differ, 200);  // a flat-ish 1000-way draw rarely coincides
}

TEST(Sampler, TopKOneIsGreedy) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const auto logits = random_logits(5000, 1.0f, 100 + seed);
    SamplingParams p = plain(1.5f, seed);
    p.top_k = 1;
    EXPECT_EQ(Sampler(p).sample(logits.data(), 5000, {}), argmax(logits));
  }
}

TEST(Sampler, TopKKeepsOnlyTheKBest) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.9f, -1.0f, 2.8f};
  SamplingParams p = plain(1.0f);
  p.top_k = 2;
  Sampler s(p);
  const auto f = frequencies(s, logits, 20000);
  const double p1 = 1.0 / (1.0 + std::exp(-0.1));  // renormalized over {1, 3}
  EXPECT_NEAR(f[1], p1, 0.015);
  EXPECT_NEAR(f[3], 1.0 - p1, 0.015);
}

TEST(Sampler, TinyTopPKeepsOnlyArgmax) {
  const auto logits = random_logits(262144, 1.0f, 9);
  SamplingParams p = plain(1.0f);
  p.top_p = 1e-6f;
  Sampler s(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits.data(), 262144, {}), argmax(logits));
}

// OpenAI's top_p minimum is 0: the nucleus is the likeliest token alone,
// whatever the temperature and seed (greedy).
TEST(Sampler, TopPZeroIsGreedy) {
  for (uint32_t trial = 0; trial < 8; ++trial) {
    for (int n : {50, 262144}) {  // the sorted walk and the bucketed one
      const auto logits = random_logits(n, 3.0f, 100 + trial);
      SamplingParams p = plain(2.0f, trial);
      p.top_p = 0.0f;
      if (n == 50) p.top_k = 40;
      Sampler s(p);
      for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(logits.data(), n, {}), argmax(logits)) << n;
    }
  }
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  // probs 0.4, 0.3, 0.2, 0.1: top_p 0.6 keeps {0, 1} (0.4 < 0.6 <= 0.7).
  const std::vector<float> logits = {std::log(0.3f), std::log(0.1f), std::log(0.4f),
                                     std::log(0.2f)};
  SamplingParams p = plain(1.0f);
  p.top_p = 0.6f;
  Sampler s(p);
  const auto f = frequencies(s, logits, 20000);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_EQ(f[3], 0.0);
  EXPECT_NEAR(f[2], 0.4 / 0.7, 0.015);
  EXPECT_NEAR(f[0], 0.3 / 0.7, 0.015);
}

TEST(Sampler, TopPOverLargeVocabMatchesFullSortNucleus) {
  // Without top-k the nucleus is found by growing a partial sort; compare it
  // with a brute-force full sort.
  const int n = 262144;
  const auto logits = random_logits(n, 2.5f, 11);
  const float top_p = 0.9f;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const double mx = logits[order[0]];
  double total = 0;
  for (float l : logits) total += std::exp(l - mx);
  std::set<int> nucleus;
  double cum = 0;
  for (int id : order) {
    nucleus.insert(id);
    cum += std::exp(logits[id] - mx);
    if (cum >= top_p * total) break;
  }
  ASSERT_GT(nucleus.size(), 100u);
  ASSERT_LT(nucleus.size(), (size_t)n / 2);

  SamplingParams p = plain(1.0f);
  p.top_p = top_p;
  Sampler s(p);
  // 10% of the mass lies outside: 300 draws would all miss it with p = 0.9^300.
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(nucleus.count(s.sample(logits.data(), n, {}))) << "draw " << i;
  }
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  // probs 0.5, 0.3, 0.15, 0.05: min_p 0.2 -> threshold 0.1 drops token 3.
  const std::vector<float> logits = {std::log(0.05f), std::log(0.3f), std::log(0.5f),
                                     std::log(0.15f)};
  SamplingParams p = plain(1.0f);
  p.min_p = 0.2f;
  Sampler s(p);
  const auto f = frequencies(s, logits, 20000);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_NEAR(f[2], 0.5 / 0.95, 0.015);
  EXPECT_NEAR(f[1], 0.3 / 0.95, 0.015);
  EXPECT_NEAR(f[3], 0.15 / 0.95, 0.015);

  p.min_p = 0.7f;  // threshold 0.35: only the max survives
  Sampler only(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(only.sample(logits.data(), 4, {}), 2);
}

TEST(Sampler, DrawFrequenciesMatchSoftmax) {
  const std::vector<double> probs = {0.2, 0.3, 0.5};
  const std::vector<float> logits = {(float)std::log(0.2) + 4.0f, (float)std::log(0.3) + 4.0f,
                                     (float)std::log(0.5) + 4.0f};
  Sampler s(plain(1.0f, 2024));
  const auto f = frequencies(s, logits, 200000);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(f[i], probs[i], 0.005) << i;

  // Temperature 2 flattens: p_i proportional to sqrt(probs_i).
  Sampler hot(plain(2.0f, 2025));
  const auto fh = frequencies(hot, logits, 200000);
  double z = 0;
  for (double q : probs) z += std::sqrt(q);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(fh[i], std::sqrt(probs[i]) / z, 0.005) << i;
}

TEST(Sampler, DefaultChainStaysInTopK) {
  const auto logits = random_logits(49152, 1.0f, 13);
  SamplingParams p;  // defaults: top_k 40, top_p 0.95, min_p 0.05, temperature 0.8
  Sampler s(p);
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 40, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b]; });
  const std::set<int> top40(order.begin(), order.begin() + 40);
  std::set<int> seen;
  for (int i = 0; i < 2000; ++i) {
    const int32_t t = s.sample(logits.data(), (int)logits.size(), {});
    ASSERT_TRUE(top40.count(t));
    seen.insert(t);
  }
  EXPECT_GT(seen.size(), 5u);  // it really samples
}

TEST(Sampler, NanLogitsAreNeverChosen) {
  const std::vector<float> logits = {NAN, 1.0f, NAN, 0.5f};
  Sampler s(plain(1.0f));
  for (int i = 0; i < 200; ++i) {
    const int32_t t = s.sample(logits.data(), 4, {});
    EXPECT_TRUE(t == 1 || t == 3);
  }
}

TEST(Sampler, GreedyOverMaskedAndNanLogits) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> masked = {ninf, NAN, ninf, ninf};  // nothing beats -inf: the lowest id
  EXPECT_EQ(Sampler(plain(0.0f)).sample(masked.data(), 4, {}), 0);
  const std::vector<float> nan_first = {NAN, -3.0f, NAN, -1.0f, -1.0f};
  EXPECT_EQ(Sampler(plain(0.0f)).sample(nan_first.data(), 5, {}), 3);
  const TokenDistribution d = Sampler(plain(0.0f)).distribution(nan_first.data(), 5, {});
  ASSERT_EQ(d.ids.size(), 1u);
  EXPECT_EQ(d.ids[0], 3);
  EXPECT_EQ(d.probs[0], 1.0);
}

// A token's log-prob, alone (one pass) or with alternatives (the full
// log-softmax): the f64 formula, and the same bits either way.
TEST(TokenLogprobs, MatchesFormulaWithOrWithoutAlternatives) {
  for (int n : {5, 577, 128256}) {
    SCOPED_TRACE(n);
    auto logits = random_logits(n, 4.0f, 23 + (uint32_t)n);
    logits[(size_t)n / 2] = -std::numeric_limits<float>::infinity();
    double mx = *std::max_element(logits.begin(), logits.end()), z = 0;
    for (float l : logits) z += std::exp((double)l - mx);
    for (int32_t id : {0, n - 1, argmax(logits)}) {
      const TokenLogprob alone = token_logprobs(logits.data(), n, id, 0);
      const TokenLogprob with_top = token_logprobs(logits.data(), n, id, 3);
      EXPECT_TRUE(alone.top.empty());
      ASSERT_EQ(with_top.top.size(), 3u);
      EXPECT_NEAR(alone.logprob, (double)logits[(size_t)id] - mx - std::log(z), 1e-5);
      EXPECT_EQ(alone.logprob, with_top.logprob);
      EXPECT_EQ(with_top.top[0].id, argmax(logits));
    }
  }
}

TEST(LogSoftmax, MatchesFormulaAndNormalizes) {
  const auto logits = random_logits(577, 5.0f, 17);
  std::vector<float> out;
  log_softmax(logits.data(), 577, out);
  ASSERT_EQ(out.size(), 577u);
  double mx = *std::max_element(logits.begin(), logits.end()), z = 0;
  for (float l : logits) z += std::exp(l - mx);
  double total = 0;
  for (int i = 0; i < 577; ++i) {
    EXPECT_NEAR(out[i], logits[i] - mx - std::log(z), 1e-5);
    total += std::exp((double)out[i]);
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
}

}  // namespace
}  // namespace stride
