// The shared SIMD layer (kernels/simd/): the one vector exp against std::exp
// over its whole range and at its edges, and the horizontal reductions
// against scalar sums.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/simd/exp.h"
#include "kernels/simd/reduce.h"

namespace stride {

namespace {

std::vector<float> exp8(const float* x) {
  std::vector<float> y(8);
  _mm256_storeu_ps(y.data(), simd::exp_ps(_mm256_loadu_ps(x)));
  return y;
}

}  // namespace

TEST(SimdExp, MatchesStdExpOverItsRange) {
  float worst = 0.f;
  for (float x0 = -87.f; x0 < 88.f; x0 += 0.37f) {
    float x[8];
    for (int j = 0; j < 8; ++j) x[j] = x0 + 0.041f * j;
    const auto y = exp8(x);
    for (int j = 0; j < 8; ++j) {
      if (x[j] > simd::kExpHi) continue;
      const double want = std::exp((double)x[j]);
      worst = std::max(worst, (float)(std::fabs(y[j] - want) / want));
    }
  }
  EXPECT_LT(worst, 3e-7f);  // about 2 ulp
}

// Masked logits (-inf) and anything below kExpLo give exactly 0; the top saturates.
TEST(SimdExp, UnderflowsToZeroAndSaturates) {
  const float x[8] = {-INFINITY, -1000.f, -87.5f, simd::kExpLo - 0.01f, 0.f, 1.f, 1000.f, INFINITY};
  const auto y = exp8(x);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y[j], 0.f) << j;
  EXPECT_EQ(y[4], 1.f);
  EXPECT_NEAR(y[5], std::exp(1.f), 3e-7f * std::exp(1.f));
  EXPECT_TRUE(std::isfinite(y[6]) && y[6] > 1e38f);
  EXPECT_TRUE(std::isfinite(y[7]) && y[7] > 1e38f);
}

TEST(SimdReduce, SumsAndMaxMatchScalar) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  float a[4][8];
  for (auto& r : a)
    for (float& v : r) v = nd(rng);
  __m256 v[4];
  for (int r = 0; r < 4; ++r) v[r] = _mm256_loadu_ps(a[r]);
  float four[4];
  _mm_storeu_ps(four, simd::hsum4(v[0], v[1], v[2], v[3]));
  for (int r = 0; r < 4; ++r) {
    double want = 0;
    float mx = a[r][0];
    for (float x : a[r]) {
      want += x;
      mx = std::max(mx, x);
    }
    EXPECT_NEAR(simd::hsum(v[r]), want, 1e-5);
    EXPECT_NEAR(four[r], want, 1e-5);
    EXPECT_EQ(simd::hmax(v[r]), mx);
  }
  // hsum4 uses the same tree in every lane: position never changes a bit.
  float swapped[4];
  _mm_storeu_ps(swapped, simd::hsum4(v[3], v[2], v[1], v[0]));
  for (int r = 0; r < 4; ++r) EXPECT_EQ(swapped[3 - r], four[r]);
  const __m256d d = _mm256_set_pd(1e16, 1.0, -1e16, 3.0);
  EXPECT_EQ(simd::hsum_pd(d), 4.0);
}

}  // namespace stride
