// The element-wise kernels of every path this CPU runs (kernel_paths.h),
// each against its scalar reference and bit for bit against the AVX2 path,
// whose per-lane operations and summation trees the AVX-512 kernels keep.
// Sizes cover whole 16-lane groups, a last 8-lane group and scalar tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/kernel_paths.h"
#include "kernels/ops.h"

namespace stride {
namespace {

const std::vector<int64_t> kSizes = {1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 33, 40, 100, 577, 2048, 4099};

std::vector<float> random_vec(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v((size_t)n);
  for (auto& x : v) x = d(rng);
  return v;
}

// |got - want| <= rtol * |want| + atol, element by element.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + atol) << "element " << i;
}

// run(table) on every path, that path active: each result checked by
// check(), and equal in every bit to the first path's.
void on_every_path(const std::function<std::vector<float>(const kernels::KernelTable&)>& run,
                   const std::function<void(const std::vector<float>&)>& check) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  std::vector<float> first;
  for (const CpuPath p : paths) {
    SCOPED_TRACE(cpu_path_name(p));
    ASSERT_TRUE(set_cpu_path(p).ok());
    const std::vector<float> got = run(kernels::kernel_table(p));
    check(got);
    if (first.empty()) first = got;
    else
      EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)), 0)
          << cpu_path_name(p) << " differs from " << cpu_path_name(paths[0]);
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

TEST(OpsPaths, Rmsnorm) {
  for (int64_t n : kSizes)
    for (bool with_w : {true, false}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << (with_w ? " weighted" : ""));
      const int64_t rows = 3;
      const auto x = random_vec(rows * n, -4.0f, 4.0f, 1 + (uint32_t)n);
      const auto w = random_vec(n, 0.5f, 1.5f, 2 + (uint32_t)n);
      const float* wp = with_w ? w.data() : nullptr;
      std::vector<float> ref(x.size());
      rmsnorm_ref(x.data(), wp, ref.data(), rows, n, 1e-6f);
      on_every_path(
          [&](const kernels::KernelTable& k) {
            std::vector<float> y = x;  // in place, as the model calls it
            k.rmsnorm(y.data(), wp, y.data(), rows, n, 1e-6f);
            return y;
          },
          [&](const std::vector<float>& y) { expect_close(y, as_double(ref), 1e-6, 1e-7); });
    }
}

TEST(OpsPaths, GatedActivations) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const auto g = random_vec(n, -20.0f, 20.0f, 10 + (uint32_t)n);
    const auto u = random_vec(n, -3.0f, 3.0f, 11 + (uint32_t)n);
    std::vector<float> silu(n), gelu(n);
    silu_mul_ref(g.data(), u.data(), silu.data(), n);
    gelu_tanh_mul_ref(g.data(), u.data(), gelu.data(), n);
    on_every_path(
        [&](const kernels::KernelTable& k) {
          std::vector<float> out = g;  // out aliases gate
          k.silu_mul(out.data(), u.data(), out.data(), n);
          return out;
        },
        [&](const std::vector<float>& y) { expect_close(y, as_double(silu), 2e-6, 1e-9); });
    on_every_path(
        [&](const kernels::KernelTable& k) {
          std::vector<float> out(n);
          k.gelu_tanh_mul(g.data(), u.data(), out.data(), n);
          return out;
        },
        [&](const std::vector<float>& y) { expect_close(y, as_double(gelu), 4e-6, 1e-9); });
  }
}

TEST(OpsPaths, SoftmaxWithMaskedEntries) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    auto x = random_vec(n, -30.0f, 30.0f, 20 + (uint32_t)n);
    for (int64_t i = 0; i < n; i += 5) x[i] = ninf;
    if (n == 1) x[0] = 2.0f;
    std::vector<float> ref = x;
    softmax_ref(ref.data(), n);
    on_every_path(
        [&](const kernels::KernelTable& k) {
          std::vector<float> y = x;
          k.softmax(y.data(), n);
          return y;
        },
        [&](const std::vector<float>& y) {
          expect_close(y, as_double(ref), 1e-5, 1e-9);
          for (int64_t i = 0; i < n && n > 1; i += 5) EXPECT_EQ(y[i], 0.0f);
        });
  }
  // All masked: zeros, not NaN.
  on_every_path(
      [&](const kernels::KernelTable& k) {
        std::vector<float> y(37, ninf);
        k.softmax(y.data(), 37);
        return y;
      },
      [&](const std::vector<float>& y) {
        for (float v : y) EXPECT_FALSE(std::isnan(v));
      });
}

// log_sum_exp against the f64 reference, and the same bits on every path.
TEST(OpsPaths, LogSumExpWithMaskedEntries) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  std::vector<int64_t> sizes = kSizes;
  sizes.push_back(128256);  // a vocabulary
  for (int64_t n : sizes) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    auto x = random_vec(n, -30.0f, 30.0f, 40 + (uint32_t)n);
    for (int64_t i = 3; i < n; i += 5) x[i] = ninf;
    const double ref = log_sum_exp_ref(x.data(), n);
    double first = 0.0;
    for (const CpuPath p : paths) {
      SCOPED_TRACE(cpu_path_name(p));
      const double got = kernels::kernel_table(p).log_sum_exp(x.data(), n);
      EXPECT_NEAR(got, ref, 1e-6 * std::fabs(ref) + 1e-7);
      if (p == paths[0]) first = got;
      else EXPECT_EQ(std::memcmp(&got, &first, sizeof(double)), 0) << "differs from " << cpu_path_name(paths[0]);
    }
  }
  // The reference itself against the closed form: n equal values give v + log(n).
  const std::vector<float> same(1000, 2.5f);
  EXPECT_NEAR(log_sum_exp_ref(same.data(), 1000), 2.5 + std::log(1000.0), 1e-12);
  // All masked, or nothing: -inf, not NaN.
  const std::vector<float> masked(37, ninf);
  for (const CpuPath p : paths) {
    EXPECT_EQ(kernels::kernel_table(p).log_sum_exp(masked.data(), 37), (double)ninf);
    EXPECT_EQ(kernels::kernel_table(p).log_sum_exp(masked.data(), 0), (double)ninf);
  }
  EXPECT_EQ(log_sum_exp_ref(masked.data(), 37), (double)ninf);
}

TEST(OpsPaths, AddAndSoftcap) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const auto a = random_vec(n, -5.0f, 5.0f, 30 + (uint32_t)n);
    auto b = random_vec(n, -100.0f, 100.0f, 31 + (uint32_t)n);
    for (int64_t i = 0; i < n; i += 3) b[i] *= 0.01f;  // the polynomial branch of tanh
    std::vector<double> sum(n), capped(n);
    const float cap = 30.0f;
    for (int64_t i = 0; i < n; ++i) {
      sum[i] = (double)a[i] + (double)b[i];
      capped[i] = cap * std::tanh((double)b[i] / cap);
    }
    on_every_path(
        [&](const kernels::KernelTable& k) {
          std::vector<float> y = a;
          k.add_inplace(y.data(), b.data(), n);
          return y;
        },
        [&](const std::vector<float>& y) { expect_close(y, sum, 1e-7, 0.0); });
    on_every_path(
        [&](const kernels::KernelTable& k) {
          std::vector<float> y = b;
          k.softcap(y.data(), n, cap);
          return y;
        },
        [&](const std::vector<float>& y) { expect_close(y, capped, 2e-6, 1e-9); });
  }
}

// rope runs the active path's rotations: compare it on each path with rope_ref.
TEST(OpsPaths, Rope) {
  struct Shape {
    int head_dim, rot_dim;
  };
  for (const Shape s : {Shape{64, 64}, Shape{80, 80}, Shape{6, 6}, Shape{128, 32}, Shape{256, 256}, Shape{48, 40}})
    for (bool neox : {false, true}) {
      SCOPED_TRACE(testing::Message() << "head_dim=" << s.head_dim << " rot_dim=" << s.rot_dim
                                      << (neox ? " neox" : " adjacent"));
      RopeTable table = RopeTable::plain(10000.0, s.rot_dim, 1.0, neox);
      table.magnitude = 1.1f;
      const int n_tok = 5, n_heads = 3;
      const std::vector<int32_t> pos = {0, 1, 17, 4095, 1000003};
      const auto x = random_vec((int64_t)n_tok * n_heads * s.head_dim, -2.0f, 2.0f, (uint32_t)s.head_dim);
      std::vector<float> ref = x;
      rope_ref(ref.data(), pos.data(), n_tok, n_heads, s.head_dim, table);
      on_every_path(
          [&](const kernels::KernelTable&) {
            std::vector<float> y = x;
            rope(y.data(), pos.data(), n_tok, n_heads, s.head_dim, table);
            return y;
          },
          [&](const std::vector<float>& y) { expect_close(y, as_double(ref), 1e-5, 1e-5); });
    }
}

// The public entry points run the active path's kernels.
TEST(OpsPaths, EntryPointsFollowTheActivePath) {
  const auto g = random_vec(100, -5.0f, 5.0f, 40);
  const auto u = random_vec(100, -5.0f, 5.0f, 41);
  for (const CpuPath p : supported_cpu_paths()) {
    ASSERT_TRUE(set_cpu_path(p).ok());
    std::vector<float> a(100), b(100);
    silu_mul(g.data(), u.data(), a.data(), 100);
    kernels::kernel_table(p).silu_mul(g.data(), u.data(), b.data(), 100);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * 100), 0) << cpu_path_name(p);
    EXPECT_EQ(&kernels::active_kernels(), &kernels::kernel_table(p));
  }
  ASSERT_TRUE(set_cpu_path(supported_cpu_paths().back()).ok());
}

}  // namespace
}  // namespace stride
