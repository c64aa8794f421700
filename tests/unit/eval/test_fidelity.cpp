// FidelityAccumulator against figures derived by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "eval/fidelity.h"

namespace stride {

TEST(Fidelity, AccumulatesMseKlTop1AndPerplexity) {
  FidelityAccumulator acc;
  // Position 0: dense uniform over 2 tokens, policy puts logit ln 3 on token 1.
  const float d0[2] = {0.f, 0.f};
  const float p0[2] = {0.f, (float)std::log(3.0)};
  acc.add(d0, p0, 2, /*next=*/1);
  // Position 1: identical rows, no target (the last position).
  const float d1[2] = {2.f, 0.f};
  acc.add(d1, d1, 2, -1);
  const FidelityPoint pt = acc.point();
  EXPECT_EQ(pt.length, 2);
  // MSE over 4 logits: only (ln 3)^2 differs.
  EXPECT_NEAR(pt.mse, std::log(3.0) * std::log(3.0) / 4, 1e-6);
  // KL(uniform || (1/4, 3/4)) = 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75), then averaged over 2 positions.
  const double kl0 = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
  EXPECT_NEAR(pt.kl, kl0 / 2, 1e-7);
  // Argmax: position 0 ties at index 0 for dense vs 1 for policy; position 1 agrees.
  EXPECT_DOUBLE_EQ(pt.top1, 0.5);
  // One target (token 1): dense p = 1/2, policy p = 3/4.
  EXPECT_NEAR(pt.ppl_dense, 2.0, 1e-6);
  EXPECT_NEAR(pt.ppl_policy, 4.0 / 3.0, 1e-6);
}

TEST(Fidelity, EmptyIsZero) {
  FidelityAccumulator acc;
  const FidelityPoint pt = acc.point();
  EXPECT_EQ(pt.length, 0);
  EXPECT_EQ(pt.mse, 0);
}

}  // namespace stride

namespace stride {

TEST(Fidelity, RecordsNllPerPositionAndBucketsPerplexity) {
  FidelityAccumulator acc;
  const float d[2] = {0.f, 0.f};  // p = 1/2 for either token: NLL ln 2
  for (int i = 0; i < 5; ++i) acc.add(d, d, 2, i % 2);
  acc.add(d, d, 2, -1);
  ASSERT_EQ(acc.nll_dense().size(), 5u);
  EXPECT_NEAR(acc.nll_policy()[4], std::log(2.0), 1e-6);
  const auto curve = bucket_perplexity(acc.nll_dense(), 2);
  ASSERT_EQ(curve.size(), 3u);  // 2 + 2 + 1 positions
  for (double p : curve) EXPECT_NEAR(p, 2.0, 1e-5);
  const std::vector<float> nll = {0.f, 2.f};
  EXPECT_NEAR(bucket_perplexity(nll, 4)[0], std::exp(1.0), 1e-6);
}

}  // namespace stride
