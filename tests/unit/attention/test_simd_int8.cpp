// The AVX2 int8 loops of the attention kernel against their scalar
// references, over head sizes with and without vector tails and key counts
// that are and are not multiples of four.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention/simd_int8.h"

namespace stride {

namespace {

struct Data {
  std::vector<float> qa, qb, scales, pa, pb, oa, ob;
  std::vector<int8_t> rows;  // [n, d]
};

Data make(int n, int d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_int_distribution<int> qi(-127, 127);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Data x;
  for (int i = 0; i < d; ++i) {
    x.qa.push_back(nd(rng));
    x.qb.push_back(nd(rng));
    x.oa.push_back(nd(rng));
    x.ob.push_back(nd(rng));
  }
  for (int t = 0; t < n; ++t) {
    x.scales.push_back(0.01f + 0.05f * u(rng));
    x.pa.push_back(u(rng));
    x.pb.push_back(u(rng));
  }
  for (int i = 0; i < n * d; ++i) x.rows.push_back((int8_t)qi(rng));
  return x;
}

// Rounding bound of a float dot product: a few ulps of sum |q_i k_i| (times the scale).
float dot_tol(const std::vector<float>& q, const int8_t* k, float scale, int d) {
  double m = 0;
  for (int i = 0; i < d; ++i) m += std::fabs((double)q[i] * k[i]);
  return (float)(1e-6 * m * scale) + 1e-7f;
}

}  // namespace

TEST(SimdInt8, DotRowsMatchScalar) {
  for (int d : {3, 8, 20, 44, 64, 256})
    for (int n : {1, 3, 4, 7, 16, 17}) {
      SCOPED_TRACE("d=" + std::to_string(d) + " n=" + std::to_string(n));
      const Data x = make(n, d, (uint32_t)(d * 100 + n));
      std::vector<float> want_a(n), want_b(n), got(n), got_a(n), got_b(n);
      simd::dot_rows_i8_ref(x.qa.data(), x.rows.data(), x.scales.data(), n, d, want_a.data());
      simd::dot_rows_i8_ref(x.qb.data(), x.rows.data(), x.scales.data(), n, d, want_b.data());
      simd::dot_rows_i8(x.qa.data(), x.rows.data(), x.scales.data(), n, d, got.data());
      simd::dot_rows_i8_x2(x.qa.data(), x.qb.data(), x.rows.data(), x.scales.data(), n, d,
                           got_a.data(), got_b.data());
      for (int t = 0; t < n; ++t) {
        const int8_t* kt = x.rows.data() + t * d;
        const float tol_a = dot_tol(x.qa, kt, x.scales[t], d), tol_b = dot_tol(x.qb, kt, x.scales[t], d);
        EXPECT_NEAR(got[t], want_a[t], tol_a) << t;
        EXPECT_NEAR(got_a[t], want_a[t], tol_a) << t;
        EXPECT_NEAR(got_b[t], want_b[t], tol_b) << t;
        EXPECT_NEAR(x.scales[t] * simd::dot_i8(x.qa.data(), kt, d), want_a[t], tol_a) << t;
      }
    }
}

TEST(SimdInt8, PvAccumulateMatchesScalar) {
  for (int d : {3, 8, 20, 44, 64, 256})
    for (int n : {1, 5, 16}) {
      SCOPED_TRACE("d=" + std::to_string(d) + " n=" + std::to_string(n));
      const Data x = make(n, d, (uint32_t)(d * 31 + n));
      const float alpha_a = 0.7f, alpha_b = 0.25f;
      std::vector<float> want_a = x.oa, want_b = x.ob;
      simd::pv_accumulate_i8_ref(want_a.data(), alpha_a, x.pa.data(), x.rows.data(), n, d);
      simd::pv_accumulate_i8_ref(want_b.data(), alpha_b, x.pb.data(), x.rows.data(), n, d);
      std::vector<float> one = x.oa, two_a = x.oa, two_b = x.ob;
      simd::pv_accumulate_i8(one.data(), alpha_a, x.pa.data(), x.rows.data(), n, d);
      simd::pv_accumulate_i8_x2(two_a.data(), two_b.data(), alpha_a, alpha_b, x.pa.data(),
                                x.pb.data(), x.rows.data(), n, d);
      for (int i = 0; i < d; ++i) {
        // Values up to 127 * n: compare relative to that magnitude.
        const float tol = 1e-6f * 127 * n;
        EXPECT_NEAR(one[i], want_a[i], tol) << i;
        EXPECT_NEAR(two_a[i], want_a[i], tol) << i;
        EXPECT_NEAR(two_b[i], want_b[i], tol) << i;
      }
    }
}

}  // namespace stride
