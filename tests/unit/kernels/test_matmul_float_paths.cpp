// The float matmul (f32, f16, bf16 weights) on every path's tiles against
// the double-precision reference. Tiles that widen the weights to f32 keep
// the AVX2 summation order, so they must equal the AVX2 result bit for bit;
// the vdpbf16ps tiles (AVX512-BF16) split activations into bf16 terms that
// leave less than 2^-26 |x| and sum in another order: held to the f32 bound,
// as are the AMX tiles (bf16 terms of weights and activations; run on the
// software model of the tile unit where the CPU has no AMX).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/kernel_paths.h"
#include "kernels/matmul.h"
#include "kernels/packed_matrix.h"
#include "kernels/tmul_model.h"

namespace stride {
namespace {

// [n_out, n_in] random weights in [-1, 1] stored as t (bf16: truncated).
struct FloatWeight {
  std::vector<uint8_t> bytes;
  TensorView view;
  FloatWeight(DType t, int64_t n_in, int64_t n_out, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
    const int64_t n = n_in * n_out;
    bytes.resize((size_t)(n * (t == DType::F32 ? 4 : 2)));
    for (int64_t i = 0; i < n; ++i) {
      const float v = ud(rng);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const uint16_t h = t == DType::F16 ? fp32_to_fp16(v) : (uint16_t)(bits >> 16);
      if (t == DType::F32) std::memcpy(bytes.data() + 4 * i, &v, 4);
      else std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    view.name = std::string("w");
    view.type = t;
    view.n_dims = 2;
    view.ne = {n_in, n_out, 1, 1};
    view.data = bytes.data();
    view.nbytes = (int64_t)bytes.size();
  }
};

struct Table {
  std::string name;
  const kernels::KernelTable* k;
  bool exact;  // widens weights (no bf16 terms, no tiles): must equal the AVX2 tiles bit for bit
};

std::vector<Table> tables_to_test() {
  std::vector<Table> out;
  for (const CpuPath p : supported_cpu_paths()) {
    const kernels::KernelTable& k = kernels::kernel_table(p);
    out.push_back({cpu_path_name(p), &k, !k.bf16_terms && !k.x_tiles});
  }
  if (const kernels::KernelTable* dot = kernels::avx512_bf16_dot_table())
    out.push_back({"avx512 vdpbf16ps", dot, false});
  if (const kernels::KernelTable* model = kernels::amx_model_float_table())
    out.push_back({"amx tiles on the software model", model, false});
  return out;
}

TEST(MatmulFloatPaths, EveryPathMatchesTheReference) {
  const std::vector<Table> tables = tables_to_test();
  ASSERT_FALSE(tables.empty());
  ThreadPool pool1(1), pool3(3);
  int checked = 0, dot_checked = 0;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t n_in : {1, 7, 8, 9, 31, 32, 33, 100, 576})
      for (int64_t n_out : {1, 2, 3, 7, 8, 9, 17, 40})
        for (int64_t n_tok : {1, 2, 5, 6, 7, 13, 70}) {
          if (n_in * n_out * n_tok > 400'000) continue;
          SCOPED_TRACE(testing::Message() << dtype_name(t) << " n_in=" << n_in << " n_out=" << n_out
                                          << " n_tok=" << n_tok);
          const FloatWeight w(t, n_in, n_out, (uint32_t)(n_in * 131 + n_out * 7 + n_tok));
          std::mt19937 rng((uint32_t)(n_tok * 17 + n_in));
          std::normal_distribution<float> nd(0.0f, 2.0f);
          std::vector<float> x((size_t)(n_tok * n_in));
          for (auto& v : x) v = nd(rng);
          std::vector<float> ref((size_t)(n_tok * n_out));
          matmul_ref(w.view, x.data(), ref.data(), n_tok);
          // Σ|w||x| per output: the scale of its rounding error.
          std::vector<float> absx(x.size());
          for (size_t i = 0; i < x.size(); ++i) absx[i] = std::fabs(x[i]);
          std::vector<float> absw_y(ref.size());
          // |w| is another weight of the same type, read by the reference too.
          FloatWeight aw = w;
          aw.view.data = aw.bytes.data();
          const size_t esz = t == DType::F32 ? 4 : 2;
          for (size_t i = 0; i < aw.bytes.size(); i += esz) aw.bytes[i + esz - 1] &= 0x7F;  // clear sign
          matmul_ref(aw.view, absx.data(), absw_y.data(), n_tok);

          std::vector<float> first;
          for (const Table& tb : tables)
            for (ThreadPool* pool : {&pool1, &pool3}) {
              SCOPED_TRACE(testing::Message() << tb.name << " threads=" << pool->size());
              std::vector<float> y(ref.size(), NAN);
              detail::matmul_float_on(*tb.k, w.view, x.data(), y.data(), n_tok, *pool);
              const bool dot = !tb.exact && (t == DType::BF16 || tb.k->x_tiles);
              // f32 sums: each of n_in additions rounds by 2^-24 of at most Σ|w||x|;
              // bf16 terms: x's rest below 2^-26 |x|, and on the tiles three
              // products of weight and activation terms left out, each below 2^-24 |w x|.
              const double terms = tb.k->x_tiles ? std::ldexp(1.0, -26) + 3 * std::ldexp(1.0, -24)
                                   : dot         ? std::ldexp(1.0, -26)
                                                 : 0.0;
              const double rel = terms + (double)(n_in + 16) * std::ldexp(1.0, -24);
              for (size_t i = 0; i < y.size(); ++i)
                ASSERT_NEAR(y[i], ref[i], rel * absw_y[i] + 1e-30) << "output " << i;
              if (dot) {
                ++dot_checked;
                continue;
              }
              if (first.empty()) first = y;
              else
                ASSERT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0)
                    << "differs from the " << tables[0].name << " tiles";
              ++checked;
            }
        }
  EXPECT_GT(checked, 300);
  if (kernels::avx512_bf16_dot_table()) {
    EXPECT_GT(dot_checked, 50);
  }
}

// Repacked float weights (8 rows' 8-element groups side by side) give every
// table's row-major result bit for bit: same values, same order per output,
// padding rows of the last group never stored. The vdpbf16ps table runs the
// AVX-512 tiles on packed weights.
TEST(MatmulFloatPaths, PackedWeightsGiveTheRowMajorResult) {
  const std::vector<Table> tables = tables_to_test();
  ThreadPool pool1(1), pool3(3);
  int checked = 0;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t n_in : {8, 16, 40, 96, 576})
      for (int64_t n_out : {1, 7, 8, 9, 17, 40, 70})
        for (int64_t n_tok : {1, 6, 7, 70}) {
          if (n_in * n_out * n_tok > 400'000) continue;
          SCOPED_TRACE(testing::Message() << dtype_name(t) << " n_in=" << n_in << " n_out=" << n_out
                                          << " n_tok=" << n_tok);
          const FloatWeight w(t, n_in, n_out, (uint32_t)(n_in * 31 + n_out * 3 + n_tok));
          ASSERT_TRUE(packable(w.view));
          auto pm = pack_matrix(w.view);
          ASSERT_TRUE(pm.ok()) << pm.status().message();
          EXPECT_EQ(pm.value().n_groups, (n_out + 7) / 8);
          std::vector<float> x((size_t)(n_tok * n_in));
          for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.23f * (float)i) * (1.0f + (float)(i % 5));
          for (const Table& tb : tables)
            for (ThreadPool* pool : {&pool1, &pool3}) {
              SCOPED_TRACE(testing::Message() << tb.name << " threads=" << pool->size());
              const kernels::KernelTable& row_major =
                  tb.k->bf16_terms ? kernels::kernel_table(CpuPath::Avx512) : *tb.k;
              std::vector<float> want((size_t)(n_tok * n_out), NAN), got(want.size(), NAN);
              detail::matmul_float_on(row_major, w.view, x.data(), want.data(), n_tok, *pool);
              detail::matmul_float_packed_on(*tb.k, pm.value(), x.data(), got.data(), n_tok, *pool);
              ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
              ++checked;
            }
        }
  EXPECT_GT(checked, 200);
  // matmul_packed runs the active path's float tiles.
  const FloatWeight w(DType::BF16, 64, 21, 3);
  auto pm = pack_matrix(w.view);
  ASSERT_TRUE(pm.ok());
  std::vector<float> x(64 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.7f * (float)i);
  std::vector<float> want(21 * 5), got(21 * 5), got_multi(21 * 5);
  matmul(w.view, x.data(), want.data(), 5, pool3);
  matmul_packed(pm.value(), x.data(), got.data(), 5, pool3);
  const PackedMatrix* ws[1] = {&pm.value()};
  float* ys[1] = {got_multi.data()};
  matmul_packed_multi(ws, ys, 1, x.data(), 5, pool3);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(want.data(), got_multi.data(), want.size() * sizeof(float)), 0);
}

// Rows that are not whole 8-element groups stay row-major.
TEST(MatmulFloatPaths, OddRowLengthsAreNotPacked) {
  const FloatWeight w(DType::F16, 12, 4, 1);
  EXPECT_TRUE(packable(DType::F16));
  EXPECT_FALSE(packable(w.view));
  EXPECT_EQ(pack_matrix(w.view).status().code(), StatusCode::kUnsupported);
}

// The AMX tiles compute every token alike (16-token tiles, unused columns
// zero): a token's outputs are the same bytes whatever batch it is in and
// however the work is split, which prefill-then-decode relies on.
TEST(MatmulFloatPaths, AmxTilesGiveATokenTheSameBytesInAnyBatch) {
  const kernels::KernelTable* model = kernels::amx_model_float_table();
  const std::vector<CpuPath> paths = supported_cpu_paths();
  if (!model) {  // no AVX-512: neither the tiles nor their model run here
    EXPECT_EQ(paths.back(), CpuPath::Avx2);
    return;
  }
  std::vector<const kernels::KernelTable*> tables = {model};
  if (paths.back() == CpuPath::Amx && kernels::kernel_table(CpuPath::Amx).x_tiles)
    tables.push_back(&kernels::kernel_table(CpuPath::Amx));
  constexpr int64_t n_in = 200, n_out = 50, n_tok = 37;
  std::vector<float> x(n_in * n_tok);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.11f * (float)i) * (1.0f + (float)(i % 7));
  ThreadPool pool1(1), pool3(3);
  const uint64_t dots_before = tmul_model::dots_run();
  for (const kernels::KernelTable* k : tables)
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      SCOPED_TRACE(testing::Message() << dtype_name(t));
      const FloatWeight w(t, n_in, n_out, 77);
      std::vector<float> all(n_out * n_tok);
      detail::matmul_float_on(*k, w.view, x.data(), all.data(), n_tok, pool3);
      for (int64_t tok : {0, 15, 16, 36}) {
        std::vector<float> one(n_out);
        detail::matmul_float_on(*k, w.view, x.data() + tok * n_in, one.data(), 1, pool1);
        EXPECT_EQ(std::memcmp(one.data(), all.data() + tok * n_out, n_out * sizeof(float)), 0) << "token " << tok;
      }
    }
  EXPECT_GT(tmul_model::dots_run(), dots_before) << "the model's tables did not run the tile dot";
}

// matmul() runs the active path's tiles.
TEST(MatmulFloatPaths, EntryPointFollowsTheActivePath) {
  const FloatWeight w(DType::BF16, 96, 24, 5);
  std::vector<float> x(96 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * (float)i);
  ThreadPool pool(2);
  for (const CpuPath p : supported_cpu_paths()) {
    ASSERT_TRUE(set_cpu_path(p).ok());
    std::vector<float> a(24 * 3), b(24 * 3);
    matmul(w.view, x.data(), a.data(), 3, pool);
    detail::matmul_float_on(kernels::kernel_table(p), w.view, x.data(), b.data(), 3, pool);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << cpu_path_name(p);
  }
  ASSERT_TRUE(set_cpu_path(supported_cpu_paths().back()).ok());
}

}  // namespace
}  // namespace stride
