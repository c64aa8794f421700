// RoPE (normal and NeoX) against a hand-written double-precision formula,
// including positions past one million where f32 angles would be wrong.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops.h"

namespace stride {
namespace {

struct RopeCase {
  int n_heads, head_dim, rot_dim;
  float base, freq_scale;
};

// Expected output for one head vector v at position p, in double.
std::vector<double> rope_formula(const float* v, int head_dim, int rot_dim, double p, double base,
                                 double freq_scale, bool neox) {
  std::vector<double> out(v, v + head_dim);
  const int half = rot_dim / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = p * freq_scale * std::pow(base, -2.0 * i / rot_dim);
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + half : 2 * i + 1;
    out[a] = v[a] * std::cos(angle) - v[b] * std::sin(angle);
    out[b] = v[a] * std::sin(angle) + v[b] * std::cos(angle);
  }
  return out;
}

const std::vector<int32_t> kPositions = {0, 1, 4097, 1000003};

std::vector<float> random_heads(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class RopeTest : public ::testing::TestWithParam<bool> {};

TEST_P(RopeTest, FastAndRefMatchFormula) {
  const bool neox = GetParam();
  const std::vector<RopeCase> cases = {
      {3, 64, 64, 10000.0f, 1.0f},     // full rotation
      {2, 64, 32, 10000.0f, 1.0f},     // partial: dims 32..63 untouched
      {2, 80, 80, 1000000.0f, 1.0f},   // gemma-like base
      {1, 18, 18, 10000.0f, 0.25f},    // scalar tails, linear scaling
      {4, 128, 128, 500000.0f, 1.0f},  // llama3-like base
  };
  for (const RopeCase& rc : cases) {
    const int64_t n_tok = (int64_t)kPositions.size();
    const auto x = random_heads((size_t)n_tok * rc.n_heads * rc.head_dim, 7 + rc.head_dim);
    auto fast = x, ref = x;
    const RopeTable table = RopeTable::plain(rc.base, rc.rot_dim, rc.freq_scale, neox);
    rope(fast.data(), kPositions.data(), n_tok, rc.n_heads, rc.head_dim, table);
    rope_ref(ref.data(), kPositions.data(), n_tok, rc.n_heads, rc.head_dim, table);
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int h = 0; h < rc.n_heads; ++h) {
        const size_t off = ((size_t)t * rc.n_heads + h) * rc.head_dim;
        const auto want = rope_formula(x.data() + off, rc.head_dim, rc.rot_dim, kPositions[t],
                                       rc.base, rc.freq_scale, neox);
        for (int d = 0; d < rc.head_dim; ++d) {
          SCOPED_TRACE(::testing::Message() << "pos=" << kPositions[t] << " head=" << h
                                            << " dim=" << d << " head_dim=" << rc.head_dim);
          ASSERT_NEAR(fast[off + d], want[d], 2e-6);
          ASSERT_NEAR(ref[off + d], want[d], 2e-7);
          if (d >= rc.rot_dim) {
            ASSERT_EQ(fast[off + d], x[off + d]);  // beyond rot_dim: untouched
          }
        }
      }
    }
  }
}

TEST_P(RopeTest, PositionZeroIsIdentity) {
  const auto x = random_heads(2 * 64, 3);
  auto y = x;
  const int32_t pos = 0;
  rope(y.data(), &pos, 1, 2, 64, RopeTable::plain(10000.0, 64, 1.0, GetParam()));
  EXPECT_EQ(y, x);
}

TEST_P(RopeTest, PreservesNorm) {
  const int n_heads = 4, head_dim = 64;
  const auto x = random_heads(kPositions.size() * n_heads * head_dim, 5);
  auto y = x;
  rope(y.data(), kPositions.data(), (int64_t)kPositions.size(), n_heads, head_dim,
       RopeTable::plain(10000.0, head_dim, 1.0, GetParam()));
  for (size_t v = 0; v < kPositions.size() * n_heads; ++v) {
    double n0 = 0, n1 = 0;
    for (int d = 0; d < head_dim; ++d) {
      n0 += (double)x[v * head_dim + d] * x[v * head_dim + d];
      n1 += (double)y[v * head_dim + d] * y[v * head_dim + d];
    }
    EXPECT_NEAR(std::sqrt(n1), std::sqrt(n0), 1e-5 * std::sqrt(n0)) << "vector " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Pairing, RopeTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "NeoX" : "Normal"; });

// The phase at 1e6 needs double angles: an f32 product pos * theta is off by
// far more than the tolerance above, so the formula test really guards this.
TEST(Rope, FloatAngleWouldBeWrongAtLargePositions) {
  const double theta = std::pow(10000.0, -2.0 * 1 / 64);
  const float angle_f = 1000003.0f * (float)theta;
  const double angle_d = 1000003.0 * theta;
  EXPECT_GT(std::fabs(std::cos((double)angle_f) - std::cos(angle_d)), 1e-3);
}

}  // namespace
}  // namespace stride
