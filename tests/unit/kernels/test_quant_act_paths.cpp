// Activation quantization feeds the integer tiles, so every path must write
// the reference's bytes exactly: int8 values (round half to even), scales,
// sums and zeroed padding, on blocks chosen to hit ties, zeros, outliers and
// subnormals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/kernel_paths.h"
#include "kernels/quant_act.h"

namespace stride {
namespace {

// [n_tok, n_in] activations, each 32-element block of one kind.
std::vector<float> tricky_acts(int64_t n_tok, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)(n_tok * n_in));
  for (int64_t b = 0; b < n_tok * n_in / 32; ++b) {
    float* xb = x.data() + b * 32;
    switch (b % 6) {
      case 0:  // plain, scale varying by block
        for (int j = 0; j < 32; ++j) xb[j] = nd(rng) * std::ldexp(1.0f, (int)(b % 11) - 5);
        break;
      case 1:  // amax 127 makes the inverse scale 1: every k + 0.5 is a tie
        for (int j = 0; j < 32; ++j) xb[j] = (float)((int)(rng() % 200) - 100) + 0.5f;
        xb[rng() % 32] = (b % 12 == 1) ? 127.0f : -127.0f;
        break;
      case 2:  // all zero: scale 0
        for (int j = 0; j < 32; ++j) xb[j] = 0.0f;
        break;
      case 3:  // one outlier, the rest rounds to 0 or +-1
        for (int j = 0; j < 32; ++j) xb[j] = nd(rng) * 1e-3f;
        xb[rng() % 32] = 250.0f;
        break;
      case 4:  // subnormal and huge magnitudes
        for (int j = 0; j < 32; ++j) xb[j] = nd(rng) * ((b / 6) % 2 ? 1e-40f : 1e30f);
        break;
      default:  // negative zeros and a single value
        for (int j = 0; j < 32; ++j) xb[j] = -0.0f;
        xb[rng() % 32] = -3.0f;
        break;
    }
  }
  return x;
}

template <typename T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void expect_same(const QuantizedActs& got, const QuantizedActs& want) {
  EXPECT_EQ(got.n_tok, want.n_tok);
  EXPECT_EQ(got.row_blocks, want.row_blocks);
  EXPECT_TRUE(same_bytes(got.q, want.q)) << "int8 values differ";
  EXPECT_TRUE(same_bytes(got.d, want.d)) << "scales differ";
  EXPECT_TRUE(same_bytes(got.s, want.s)) << "scaled sums differ";
  EXPECT_TRUE(same_bytes(got.hs, want.hs)) << "half sums differ";
  EXPECT_TRUE(same_bytes(got.qs, want.qs)) << "sums differ";
}

TEST(QuantActPaths, BytesEqualTheReferenceOnEveryPath) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  int cases = 0;
  for (int64_t n_in : {32, 64, 96, 256, 288, 576, 2048})
    for (int64_t n_tok : {1, 3, 17}) {
      SCOPED_TRACE(testing::Message() << "n_in=" << n_in << " n_tok=" << n_tok);
      const auto x = tricky_acts(n_tok, n_in, (uint32_t)(n_in * 7 + n_tok));
      QuantizedActs ref;
      quantize_acts_ref(x.data(), n_tok, n_in, ref);
      for (const CpuPath p : paths) {
        SCOPED_TRACE(cpu_path_name(p));
        ASSERT_TRUE(set_cpu_path(p).ok());
        // Whole calls, through the entry point, into a buffer left dirty.
        QuantizedActs got;
        got.q.assign(ref.q.size(), 0x55);
        got.d.assign(ref.d.size(), 7.0f);
        quantize_acts(x.data(), n_tok, n_in, got);
        expect_same(got, ref);
        // Row ranges in any order through the path's own kernel.
        QuantizedActs rows;
        quantize_acts_prepare(n_tok, n_in, rows);
        const auto& k = kernels::kernel_table(p);
        k.quantize_act_rows(x.data(), n_tok / 2, n_tok, rows);
        k.quantize_act_rows(x.data(), 0, n_tok / 2, rows);
        expect_same(rows, ref);
        ++cases;
      }
    }
  EXPECT_EQ(cases, 21 * (int)paths.size());
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

// K-quant weights take one scale per 256 elements (act_scale_blocks): every
// path writes the reference's bytes, and each block's d is max|x| over its
// super-block / 127 (computed here, in double), the same for all 8 blocks.
TEST(QuantActPaths, SuperBlockScalesEqualTheReferenceOnEveryPath) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_EQ(act_scale_blocks(DType::Q4_K), 8);
  ASSERT_EQ(act_scale_blocks(DType::Q4_0), 1);
  for (int64_t n_in : {256, 512, 2304})
    for (int64_t n_tok : {1, 5}) {
      SCOPED_TRACE(testing::Message() << "n_in=" << n_in << " n_tok=" << n_tok);
      const auto x = tricky_acts(n_tok, n_in, (uint32_t)(n_in * 3 + n_tok));
      QuantizedActs ref;
      quantize_acts_ref(x.data(), n_tok, n_in, ref, 8);
      for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t sb = 0; sb < n_in / 256; ++sb) {
          double amax = 0;
          for (int64_t i = 0; i < 256; ++i) amax = std::max(amax, std::fabs((double)x[(size_t)(t * n_in + sb * 256 + i)]));
          const float want = amax >= 1e-30 ? (float)amax / 127.0f : 0.0f;
          for (int64_t b = 0; b < 8; ++b) ASSERT_EQ(ref.d_row(t)[sb * 8 + b], want) << "token " << t << " block " << b;
        }
      for (const CpuPath p : paths) {
        SCOPED_TRACE(cpu_path_name(p));
        ASSERT_TRUE(set_cpu_path(p).ok());
        QuantizedActs got;
        quantize_acts(x.data(), n_tok, n_in, got, 8);
        expect_same(got, ref);
        QuantizedActs rows;
        quantize_acts_prepare(n_tok, n_in, rows, 8);
        quantize_acts_rows(x.data(), n_tok / 2, n_tok, rows);
        quantize_acts_rows(x.data(), 0, n_tok / 2, rows);
        expect_same(rows, ref);
      }
    }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

// The ties really are ties, and they go to even, as nearbyint does.
TEST(QuantActPaths, TiesRoundToEven) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = (float)(j - 16) + 0.5f;
  x[31] = 127.0f;
  for (const CpuPath p : supported_cpu_paths()) {
    ASSERT_TRUE(set_cpu_path(p).ok());
    QuantizedActs a;
    quantize_acts(x.data(), 1, 32, a);
    for (int j = 0; j < 31; ++j) EXPECT_EQ(a.q[j], (int8_t)std::nearbyint((double)x[j])) << cpu_path_name(p) << " " << j;
    EXPECT_EQ(a.q[0], -16);  // -15.5 -> -16
    EXPECT_EQ(a.q[1], -14);  // -14.5 -> -14
  }
  ASSERT_TRUE(set_cpu_path(supported_cpu_paths().back()).ok());
}

}  // namespace
}  // namespace stride
