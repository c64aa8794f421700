// Speculative sampling: whatever the draft distribution q, the token that
// comes out of verify_draft_token is distributed as the target p. The
// reference p is a plain softmax (with temperature and top-k) written here,
// and the check is a chi-square test over many draws with fixed seeds.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sampler/sampler.h"
#include "sampler/speculative_sampling.h"

namespace stride {
namespace {

SamplingParams params(float temperature, int top_k, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<float> random_logits(int n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v((size_t)n);
  for (float& x : v) x = d(rng);
  return v;
}

// softmax(logits / t) over the top_k largest (ties: lower id), the rest 0.
std::vector<double> reference_probs(const std::vector<float>& logits, float t, int top_k) {
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = (int)i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const size_t keep = top_k > 0 ? std::min(order.size(), (size_t)top_k) : order.size();
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0.0;
  for (size_t r = 0; r < keep; ++r) sum += p[order[r]] = std::exp((double)logits[order[r]] / t);
  for (double& x : p) x /= sum;
  return p;
}

// Pearson's chi-square statistic of the counts against n * p over the
// cells with p > 0; a count where p == 0 fails outright.
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n, int* dof) {
  double x2 = 0.0;
  *dof = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double e = n * p[i];
    x2 += (counts[i] - e) * (counts[i] - e) / e;
    ++*dof;
  }
  return x2;
}

// The 0.999 quantile of chi-square with dof degrees of freedom
// (Wilson-Hilferty), so a correct sampler fails one run in a thousand.
double chi_square_bound(int dof) {
  const double z = 3.090;
  const double k = dof;
  const double a = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * a * a * a;
}

TEST(SamplerDistribution, MatchesThePlainSoftmax) {
  const std::vector<float> logits = random_logits(50, 1.5f, 3);
  for (const auto& [t, k] : std::vector<std::pair<float, int>>{{1.0f, 0}, {0.7f, 10}, {1.3f, 5}}) {
    Sampler s(params(t, k, 9));
    const TokenDistribution d = s.distribution(logits.data(), (int)logits.size(), {});
    const std::vector<double> ref = reference_probs(logits, t, k);
    double total = 0.0;
    for (size_t i = 0; i < d.ids.size(); ++i) {
      EXPECT_NEAR(d.probs[i], ref[(size_t)d.ids[i]], 1e-6) << "token " << d.ids[i];
      total += d.probs[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-9);
    EXPECT_EQ(d.ids.size(), k > 0 ? (size_t)k : logits.size());
  }
}

TEST(SamplerDistribution, GreedyIsThePointMassAtTheArgmax) {
  std::vector<float> logits = random_logits(40, 1.0f, 4);
  logits[17] = 9.0f;
  Sampler s(params(0.0f, 0, 1));
  const TokenDistribution d = s.distribution(logits.data(), (int)logits.size(), {});
  ASSERT_EQ(d.ids.size(), 1u);
  EXPECT_EQ(d.ids[0], 17);
  EXPECT_EQ(d.probs[0], 1.0);
  EXPECT_EQ(s.sample(logits.data(), (int)logits.size(), {}), 17);
}

// Draws a draft from q with an independent generator, verifies it, and
// counts the verdict's token: the counts follow p for any q.
void check_output_follows_p(const std::vector<float>& target_logits, const std::vector<float>& draft_logits,
                            float t, int top_k, bool point_mass, uint64_t seed) {
  const int n_vocab = (int)target_logits.size();
  Sampler target(params(t, top_k, seed));
  Sampler draft(params(t, 0, seed + 1));
  const TokenDistribution p = target.distribution(target_logits.data(), n_vocab, {});
  const TokenDistribution q = draft.distribution(draft_logits.data(), n_vocab, {});
  std::mt19937_64 rng(seed + 2);
  std::uniform_int_distribution<int> any_token(0, n_vocab - 1);
  const int n = 200000;
  std::vector<int> counts((size_t)n_vocab, 0);
  int accepted = 0;
  for (int i = 0; i < n; ++i) {
    // A deterministic drafter's guess is any token at all: here uniform.
    const int32_t x = point_mass ? any_token(rng) : draft.draw(q);
    const DraftVerdict v = verify_draft_token(p, x, point_mass ? nullptr : &q, target);
    ++counts[(size_t)v.token];
    accepted += v.accepted;
  }
  int dof = 0;
  const double x2 = chi_square(counts, reference_probs(target_logits, t, top_k), n, &dof);
  EXPECT_LT(x2, chi_square_bound(dof)) << "dof " << dof;
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, n);
}

TEST(SpeculativeSampling, OutputFollowsTheTargetWithADraftDistribution) {
  const std::vector<float> target = random_logits(30, 1.2f, 11);
  // A draft that roughly agrees, and one that does not.
  std::vector<float> close = target;
  for (size_t i = 0; i < close.size(); ++i) close[i] += 0.5f * std::sin((float)i);
  check_output_follows_p(target, close, 1.0f, 0, false, 100);
  check_output_follows_p(target, random_logits(30, 1.2f, 12), 1.0f, 0, false, 200);
  check_output_follows_p(target, random_logits(30, 2.0f, 13), 0.8f, 12, false, 300);
}

TEST(SpeculativeSampling, OutputFollowsTheTargetWithAPointMassDraft) {
  const std::vector<float> target = random_logits(30, 1.2f, 21);
  check_output_follows_p(target, target, 1.0f, 0, true, 400);
  check_output_follows_p(target, target, 0.7f, 8, true, 500);
}

TEST(SpeculativeSampling, GreedyAcceptsExactlyTheArgmax) {
  std::vector<float> logits = random_logits(20, 1.0f, 31);
  logits[5] = 7.0f;
  Sampler target(params(0.0f, 0, 1));
  const TokenDistribution p = target.distribution(logits.data(), 20, {});
  for (int32_t x = 0; x < 20; ++x) {
    const DraftVerdict v = verify_draft_token(p, x, nullptr, target);
    EXPECT_EQ(v.accepted, x == 5);
    EXPECT_EQ(v.token, 5);
  }
}

TEST(SpeculativeSampling, ResidualIsThePositivePartOfPMinusQ) {
  TokenDistribution p{{0, 1, 2}, {0.5, 0.3, 0.2}};
  TokenDistribution q{{0, 1, 3}, {0.7, 0.1, 0.2}};
  const TokenDistribution r = residual_distribution(p, 0, &q);
  std::map<int32_t, double> got;
  for (size_t i = 0; i < r.ids.size(); ++i) got[r.ids[i]] = r.probs[i];
  ASSERT_EQ(got.size(), 2u);  // 1: 0.2, 2: 0.2 -> 0.5 each
  EXPECT_NEAR(got[1], 0.5, 1e-12);
  EXPECT_NEAR(got[2], 0.5, 1e-12);
  const TokenDistribution point = residual_distribution(p, 1, nullptr);
  std::map<int32_t, double> pm;
  for (size_t i = 0; i < point.ids.size(); ++i) pm[point.ids[i]] = point.probs[i];
  EXPECT_EQ(pm.count(1), 0u);
  EXPECT_NEAR(pm[0], 0.5 / 0.7, 1e-12);
  EXPECT_NEAR(pm[2], 0.2 / 0.7, 1e-12);
}

}  // namespace
}  // namespace stride
