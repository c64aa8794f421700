// The vectorised top-k page score against its scalar reference, for row
// counts around the 8-row tile and head dims with and without a tail.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention/topk_bound.h"

namespace stride {
namespace {

TEST(TopkBound, MatchesScalarReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int dim : {1, 7, 8, 64, 67, 128, 256}) {
    for (int n_rows : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 192}) {
      std::vector<float> q((size_t)n_rows * dim), mn(dim), mx(dim);
      for (float& x : q) x = nd(rng);
      for (int i = 0; i < dim; ++i) {
        const float a = nd(rng), b = nd(rng);
        mn[i] = std::min(a, b);
        mx[i] = std::max(a, b);
      }
      std::vector<const float*> rows;
      for (int r = 0; r < n_rows; ++r) rows.push_back(q.data() + (size_t)r * dim);
      const float ref = max_summary_bound_ref(rows.data(), n_rows, mn.data(), mx.data(), dim);
      const float got = max_summary_bound(rows.data(), n_rows, mn.data(), mx.data(), dim);
      EXPECT_NEAR(got, ref, 1e-4f * (1.f + std::fabs(ref))) << "dim " << dim << " rows " << n_rows;
    }
  }
}

TEST(TopkBound, BoundsEveryKeyInTheBox) {
  // Any key inside [mn, mx] scores at most the bound, for every row.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2.f, 2.f), t(0.f, 1.f);
  const int dim = 64, n_rows = 3;
  std::vector<float> q(n_rows * dim), mn(dim), mx(dim), key(dim);
  for (float& x : q) x = u(rng);
  for (int i = 0; i < dim; ++i) {
    mn[i] = u(rng);
    mx[i] = mn[i] + 1.f;
  }
  const float* rows[n_rows] = {q.data(), q.data() + dim, q.data() + 2 * dim};
  const float bound = max_summary_bound(rows, n_rows, mn.data(), mx.data(), dim);
  for (int trial = 0; trial < 200; ++trial) {
    for (int i = 0; i < dim; ++i) key[i] = mn[i] + t(rng) * (mx[i] - mn[i]);
    for (int r = 0; r < n_rows; ++r) {
      float dot = 0.f;
      for (int i = 0; i < dim; ++i) dot += rows[r][i] * key[i];
      EXPECT_LE(dot, bound + 1e-3f);
    }
  }
}

}  // namespace
}  // namespace stride
