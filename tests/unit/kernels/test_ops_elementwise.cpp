// Fast element-wise / row-wise kernels vs their scalar twins and vs
// independent double-precision formulas.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops.h"

namespace stride {
namespace {

const std::vector<int64_t> kSizes = {1, 7, 8, 31, 64, 577, 2048, 4099};

std::vector<float> random_vec(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v((size_t)n);
  for (float& x : v) x = d(rng);
  return v;
}

// |got - want| <= rtol * |want| + atol
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                  double atol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + atol) << what << " at " << i;
  }
}

// Outputs far below 1 (e.g. exp(-45)) carry the f32 argument's rounding
// amplified by |argument|, and the double tanh formula itself cancels for very
// negative gelu inputs: such values are compared in absolute terms.
constexpr double kTinyAbs = 1e-9;

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

TEST(Rmsnorm, FastMatchesRefAndFormula) {
  for (int64_t n : kSizes) {
    const int64_t rows = 3;
    const auto x = random_vec(rows * n, -4.0f, 4.0f, 1 + (uint32_t)n);
    const auto w = random_vec(n, 0.5f, 1.5f, 2 + (uint32_t)n);
    for (bool with_w : {true, false}) {
      const float* wp = with_w ? w.data() : nullptr;
      std::vector<float> fast(x.size()), ref(x.size());
      rmsnorm(x.data(), wp, fast.data(), rows, n, 1e-6f);
      rmsnorm_ref(x.data(), wp, ref.data(), rows, n, 1e-6f);
      std::vector<double> formula(x.size());
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += (double)x[r * n + i] * x[r * n + i];
        const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
        for (int64_t i = 0; i < n; ++i) {
          formula[r * n + i] = x[r * n + i] * inv * (with_w ? w[i] : 1.0);
        }
      }
      expect_close(fast, as_double(ref), 1e-6, 1e-7, "fast vs ref");
      expect_close(ref, formula, 1e-6, 1e-7, "ref vs formula");
    }
  }
}

TEST(Rmsnorm, InPlaceAliasing) {
  auto x = random_vec(2 * 577, -2.0f, 2.0f, 7);
  std::vector<float> expect(x.size());
  rmsnorm_ref(x.data(), nullptr, expect.data(), 2, 577, 1e-5f);
  rmsnorm(x.data(), nullptr, x.data(), 2, 577, 1e-5f);
  expect_close(x, as_double(expect), 1e-6, 1e-7, "aliased");
}

double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_d(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(GatedActivations, SiluMulMatchesRefAndFormula) {
  for (int64_t n : kSizes) {
    const auto g = random_vec(n, -20.0f, 20.0f, 10 + (uint32_t)n);
    const auto u = random_vec(n, -3.0f, 3.0f, 11 + (uint32_t)n);
    std::vector<float> fast(n), ref(n);
    std::vector<double> formula(n);
    silu_mul(g.data(), u.data(), fast.data(), n);
    silu_mul_ref(g.data(), u.data(), ref.data(), n);
    for (int64_t i = 0; i < n; ++i) formula[i] = silu_d(g[i]) * u[i];
    expect_close(fast, formula, 2e-6, kTinyAbs, "silu fast");
    expect_close(ref, formula, 2e-7, kTinyAbs, "silu ref");
  }
}

TEST(GatedActivations, GeluTanhMulMatchesRefAndFormula) {
  for (int64_t n : kSizes) {
    auto g = random_vec(n, -8.0f, 8.0f, 20 + (uint32_t)n);
    if (n > 4) g[0] = 0.0f, g[1] = 1e-4f, g[2] = -1e-4f, g[3] = -12.0f;
    const auto u = random_vec(n, -3.0f, 3.0f, 21 + (uint32_t)n);
    std::vector<float> fast(n), ref(n);
    std::vector<double> formula(n);
    gelu_tanh_mul(g.data(), u.data(), fast.data(), n);
    gelu_tanh_mul_ref(g.data(), u.data(), ref.data(), n);
    for (int64_t i = 0; i < n; ++i) formula[i] = gelu_d(g[i]) * u[i];
    expect_close(fast, formula, 2e-6, kTinyAbs, "gelu fast");
    expect_close(ref, formula, 2e-7, kTinyAbs, "gelu ref");
  }
}

TEST(GatedActivations, OutputMayAliasGate) {
  auto g = random_vec(577, -5.0f, 5.0f, 30);
  const auto u = random_vec(577, -1.0f, 1.0f, 31);
  std::vector<float> expect(577);
  silu_mul_ref(g.data(), u.data(), expect.data(), 577);
  silu_mul(g.data(), u.data(), g.data(), 577);
  expect_close(g, as_double(expect), 2e-6, kTinyAbs, "aliased silu");
}

TEST(Softmax, FastMatchesRefAndSumsToOne) {
  std::vector<int64_t> sizes = kSizes;
  sizes.push_back(262144);
  for (int64_t n : sizes) {
    auto x = random_vec(n, -30.0f, 30.0f, 40 + (uint32_t)n);
    std::vector<double> formula(n);
    double mx = -1e300, sum = 0;
    for (float v : x) mx = std::max(mx, (double)v);
    for (float v : x) sum += std::exp(v - mx);
    for (int64_t i = 0; i < n; ++i) formula[i] = std::exp(x[i] - mx) / sum;
    auto fast = x, ref = x;
    softmax(fast.data(), n);
    softmax_ref(ref.data(), n);
    expect_close(fast, formula, 2e-6, kTinyAbs, "softmax fast");
    expect_close(ref, formula, 2e-7, kTinyAbs, "softmax ref");
    double total = 0;
    for (float p : fast) total += p;
    EXPECT_NEAR(total, 1.0, 1e-5) << "n=" << n;
  }
}

TEST(Softmax, MaskedEntriesGetZero) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1.0f, -inf, 2.0f, -inf, 0.5f, -inf, -inf, 3.0f, -inf, 1.0f, -inf};
  auto ref = x;
  softmax(x.data(), (int64_t)x.size());
  softmax_ref(ref.data(), (int64_t)ref.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (ref[i] == 0.0f) {
      EXPECT_EQ(x[i], 0.0f) << i;
    }
    EXPECT_NEAR(x[i], ref[i], 1e-6f) << i;
  }
  EXPECT_NEAR(x[7], std::exp(3.0) / (std::exp(1.0) * 2 + std::exp(2.0) + std::exp(0.5) +
                                     std::exp(3.0)), 1e-6);
}

TEST(AddInplace, AddsElementwise) {
  for (int64_t n : kSizes) {
    auto y = random_vec(n, -1.0f, 1.0f, 50 + (uint32_t)n);
    const auto x = random_vec(n, -1.0f, 1.0f, 51 + (uint32_t)n);
    auto expect = y;
    for (int64_t i = 0; i < n; ++i) expect[i] += x[i];
    add_inplace(y.data(), x.data(), n);
    EXPECT_EQ(y, expect);
  }
}

TEST(Softcap, MatchesTanhFormula) {
  for (int64_t n : kSizes) {
    auto x = random_vec(n, -100.0f, 100.0f, 60 + (uint32_t)n);
    // Small inputs exercise the polynomial branch of the vector tanh.
    for (int64_t i = 0; i < n; i += 3) x[i] *= 0.01f;
    const float cap = 30.0f;
    std::vector<double> formula(n);
    for (int64_t i = 0; i < n; ++i) formula[i] = cap * std::tanh((double)x[i] / cap);
    softcap(x.data(), n, cap);
    expect_close(x, formula, 2e-6, kTinyAbs, "softcap");
  }
}

}  // namespace
}  // namespace stride
