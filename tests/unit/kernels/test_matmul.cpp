// Fast matmul vs the two scalar references, for every weight type, odd sizes
// and several thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/dequantize.h"
#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "kernels/quant_act.h"

namespace stride {
namespace {

// Offsets of the fp16 scale fields inside one block; they get finite values.
std::vector<int> half_fields(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return {0};
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: return {0, 2};
    case DType::Q6_K: return {208};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::IQ4_NL: case DType::IQ4_XS: return {0};
    default: return {};
  }
}

// Random weights of any type: random bytes with sane scales. Q8_0 quants stay
// in [-127, 127] as a real quantizer produces them.
struct RandomWeight {
  std::vector<uint8_t> bytes;
  TensorView view;
  RandomWeight(DType t, int64_t n_in, int64_t n_out, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
    const DTypeInfo* info = dtype_info(t);
    const int64_t n_blocks = n_in / info->block_elems * n_out;
    bytes.resize((size_t)(n_blocks * info->block_bytes));
    if (t == DType::F32) {
      for (size_t i = 0; i < bytes.size() / 4; ++i) {
        const float v = ud(rng);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
    } else if (t == DType::F16 || t == DType::BF16) {
      for (size_t i = 0; i < bytes.size() / 2; ++i) {
        const float v = ud(rng);
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t h = t == DType::F16 ? fp32_to_fp16(v) : (uint16_t)(bits >> 16);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
    } else {
      for (auto& b : bytes) b = (uint8_t)(rng() & 0xFF);
      for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* blk = bytes.data() + b * info->block_bytes;
        if (t == DType::Q8_0)
          for (int j = 2; j < 34; ++j)
            if (blk[j] == 0x80) blk[j] = 0x81;
        for (int off : half_fields(t)) {
          const uint16_t h = fp32_to_fp16(ud(rng) * 0.05f);
          std::memcpy(blk + off, &h, 2);
        }
        if (t == DType::MXFP4) blk[0] = (uint8_t)(118 + rng() % 8);  // E8M0 scales 2^-10..2^-3
      }
    }
    view.name = std::string("w");
    view.type = t;
    view.n_dims = 2;
    view.ne = {n_in, n_out, 1, 1};
    view.data = bytes.data();
    view.nbytes = (int64_t)bytes.size();
  }
};

std::vector<float> random_acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)n);
  for (auto& v : x) v = nd(rng);
  // A few outliers, as real activations have.
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 3.0f;
  return x;
}

double rel_error(const std::vector<float>& y, const std::vector<float>& ref) {
  double e = 0, r = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    e += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
    r += (double)ref[i] * ref[i];
  }
  return r > 0 ? std::sqrt(e / r) : std::sqrt(e);
}

// Per output: Σ_i |w_i| * |x_i - x'_i| with x' the int8-quantized activations.
std::vector<double> quantization_bound(const TensorView& w, const std::vector<float>& x,
                                       int64_t n_tok) {
  const int64_t n_in = w.ne[0], n_out = w.rows();
  QuantizedActs a;
  quantize_acts_ref(x.data(), n_tok, n_in, a, act_scale_blocks(w.type));
  std::vector<float> row((size_t)n_in);
  std::vector<double> bound((size_t)(n_out * n_tok));
  for (int64_t r = 0; r < n_out; ++r) {
    dequantize_tensor_row(w, r, row.data());
    for (int64_t t = 0; t < n_tok; ++t) {
      double b = 0;
      for (int64_t i = 0; i < n_in; ++i) {
        const double xq = (double)a.d_row(t)[i / 32] * a.q_row(t)[i];
        b += std::fabs((double)row[(size_t)i]) * std::fabs(x[(size_t)(t * n_in + i)] - xq);
      }
      bound[(size_t)(t * n_out + r)] = b;
    }
  }
  return bound;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

class MatmulTypes : public ::testing::TestWithParam<DType> {};

struct Case {
  int64_t n_in, n_out, n_tok;
  std::unique_ptr<RandomWeight> w;
  std::vector<float> x, ref, ref_q;
  std::vector<double> bound;
};

TEST_P(MatmulTypes, FastMatchesReferences) {
  const DType t = GetParam();
  const int64_t blk = dtype_info(t)->block_elems;
  // References first, so the pools' spinning workers never compete with them.
  std::vector<Case> cases;
  for (int64_t n_in : {32, 96, 256, 512, 1536}) {
    if (n_in % blk != 0) continue;
    for (int64_t n_out : {1, 3, 37, 257}) {
      for (int64_t n_tok : {1, 2, 7, 33, 300}) {
        // Keep the double-precision references affordable.
        if (n_in * n_out * n_tok > 3'000'000) continue;
        Case c{n_in, n_out, n_tok, nullptr, {}, {}, {}, {}};
        c.w = std::make_unique<RandomWeight>(t, n_in, n_out, (uint32_t)(n_in * 131 + n_out * 7 + n_tok));
        c.x = random_acts(n_in * n_tok, (uint32_t)(n_out + 1000 * n_tok));
        c.ref.resize((size_t)(n_out * n_tok));
        matmul_ref(c.w->view, c.x.data(), c.ref.data(), n_tok);
        if (!is_float(t)) {
          c.ref_q.resize(c.ref.size());
          matmul_ref_int8_acts(c.w->view, c.x.data(), c.ref_q.data(), n_tok);
          c.bound = quantization_bound(c.w->view, c.x, n_tok);
        }
        cases.push_back(std::move(c));
      }
    }
  }
  ASSERT_GT(cases.size(), 30u);
  for (int threads : {1, 2, 7}) {
    ThreadPool pool(threads);
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      // 7 threads oversubscribe small CI machines: a third of the cases suffice.
      if (threads == 7 && ci % 3 != 0) continue;
      const Case& c = cases[ci];
      std::vector<float> y(c.ref.size(), NAN);
      matmul(c.w->view, c.x.data(), y.data(), c.n_tok, pool);
      SCOPED_TRACE(testing::Message() << dtype_name(t) << " n_in=" << c.n_in << " n_out=" << c.n_out
                                      << " n_tok=" << c.n_tok << " threads=" << threads);
      for (float v : y) ASSERT_TRUE(std::isfinite(v));
      if (is_float(t)) {
        EXPECT_LT(rel_error(y, c.ref), 1e-5);
        continue;
      }
      // Exact integer path vs the same int8 activations: float rounding only.
      EXPECT_LT(rel_error(y, c.ref_q), 1e-5);
      // Int8 activations vs f32 activations: within the rigorous bound
      // |y - ref| <= Σ|w_i| |x_i - x'_i| everywhere, and small overall. (Random
      // K-quant bytes have large mins, which makes the relative error ~1%.)
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_LE(std::fabs(y[i] - c.ref[i]), c.bound[i] * 1.001 + 1e-5) << i;
      if (y.size() >= 16) {
        EXPECT_LT(rel_error(y, c.ref), 2e-2);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTypes,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0,
                                           DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q2_K,
                                           DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(QuantizeActs, FastIsBitExactWithReference) {
  for (int64_t n_in : {32, 96, 288, 1536}) {
    auto x = random_acts(n_in * 5, (uint32_t)n_in);
    // Ties and zeros: an all-zero block, and values exactly at half steps.
    for (int j = 0; j < 32; ++j) x[(size_t)j] = 0.0f;
    for (int j = 0; j < 32; ++j) x[(size_t)(32 + j)] = (float)(j - 16) * 0.5f + (j == 0 ? -0.25f : 0.0f);
    QuantizedActs a, b;
    quantize_acts(x.data(), 5, n_in, a);
    quantize_acts_ref(x.data(), 5, n_in, b);
    ASSERT_EQ(a.row_blocks % kActChunkBlocks, 0);
    EXPECT_EQ(a.q, b.q);
    EXPECT_EQ(a.d, b.d);
    EXPECT_EQ(a.s, b.s);
    EXPECT_EQ(b.d_row(0)[0], 0.0f);
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t i = 0; i < n_in; ++i) {
        const float xr = b.d_row(t)[i / 32] * b.q_row(t)[i];
        const float amax_step = b.d_row(t)[i / 32];
        ASSERT_LE(std::fabs(xr - x[(size_t)(t * n_in + i)]), 0.5f * amax_step * 1.001f + 1e-7f);
      }
  }
}

TEST(Matmul, HandComputedProduct) {
  // Q8_0 weights with d = 1 and integer activations <= 127 are exact in every path.
  std::vector<uint8_t> blocks(2 * 34, 0);
  const uint16_t one = fp32_to_fp16(1.0f);
  for (int r = 0; r < 2; ++r) {
    std::memcpy(blocks.data() + 34 * r, &one, 2);
    for (int j = 0; j < 32; ++j) blocks[(size_t)(34 * r + 2 + j)] = (uint8_t)(int8_t)(r == 0 ? 1 : (j % 2 ? -2 : 3));
  }
  TensorView w;
  w.type = DType::Q8_0;
  w.ne = {32, 2, 1, 1};
  w.data = blocks.data();
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[(size_t)j] = (float)(j == 5 ? 127 : j);  // max 127 -> d = 1
  float expect0 = 0, expect1 = 0;
  for (int j = 0; j < 32; ++j) { expect0 += x[(size_t)j]; expect1 += (j % 2 ? -2.0f : 3.0f) * x[(size_t)j]; }
  ThreadPool pool(2);
  float y[2];
  matmul(w, x.data(), y, 1, pool);
  EXPECT_EQ(y[0], expect0);
  EXPECT_EQ(y[1], expect1);
}

}  // namespace
}  // namespace stride
