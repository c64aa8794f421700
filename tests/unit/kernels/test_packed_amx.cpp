// The AMX path's prefill tiles on the software model of the tile unit
// (tmul_model.h), so that machines without AMX test the kernel code: the
// model itself against a direct reading of the instruction definitions, then
// the model-run kernel against the int8 reference and, bit for bit, against
// the AVX-512 path (needs AVX-512: the kernel's epilogue is AVX-512 code).
// On a machine with AMX, test_packed_matmul.cpp runs the real tiles too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/amx_check.h"
#include "kernels/amx_choice.h"
#include "kernels/kernel_entries.h"
#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "kernels/packed_matrix.h"
#include "kernels/packed_tiles.h"
#include "kernels/tmul_config.h"
#include "kernels/tmul_model.h"
#include "random_weight.h"

namespace stride {
namespace {

tmul::TileConfig config_of(std::initializer_list<std::array<int, 3>> tiles) {
  tmul::TileConfig c;
  c.palette = 1;
  for (const auto& t : tiles) tmul::set_tile(c, t[0], t[1], t[2]);
  return c;
}

// C[m][n] = Σ_k A[m][k] * B[k / 4][4n + k % 4], A signed, B signed or unsigned.
std::vector<int32_t> direct_dot(const std::vector<int8_t>& a, const std::vector<uint8_t>& b, int m_rows, int k_bytes,
                                int n_cols, bool b_signed) {
  std::vector<int32_t> c((size_t)(m_rows * n_cols), 0);
  for (int m = 0; m < m_rows; ++m)
    for (int n = 0; n < n_cols; ++n)
      for (int k = 0; k < k_bytes; ++k) {
        const uint8_t wb = b[(size_t)((k / 4) * n_cols * 4 + 4 * n + k % 4)];
        c[(size_t)(m * n_cols + n)] += (int32_t)a[(size_t)(m * k_bytes + k)] * (b_signed ? (int32_t)(int8_t)wb : (int32_t)wb);
      }
  return c;
}

TEST(TileModel, DotsFollowTheInstructionDefinitions) {
  std::mt19937 rng(3);
  for (const bool b_signed : {false, true}) {
    // 5 tokens x 24 bytes, B: 6 rows x (7 columns x 4 bytes); odd shapes, and
    // the extremes -128 and 255 in every operand.
    const int m_rows = 5, k_bytes = 24, n_cols = 7;
    std::vector<int8_t> a((size_t)(m_rows * k_bytes));
    std::vector<uint8_t> b((size_t)(k_bytes / 4 * n_cols * 4));
    for (auto& v : a) v = (int8_t)(rng() & 0xFF);
    for (auto& v : b) v = (uint8_t)(rng() & 0xFF);
    a[0] = -128;
    b[0] = 255;
    b[1] = 128;
    // Rows of A one stride of 40 bytes apart, as activations lie.
    std::vector<int8_t> a_strided((size_t)(m_rows * 40), 99);
    for (int m = 0; m < m_rows; ++m) std::memcpy(&a_strided[(size_t)(m * 40)], &a[(size_t)(m * k_bytes)], (size_t)k_bytes);
    const tmul::TileConfig cfg = config_of({{0, m_rows, k_bytes}, {1, k_bytes / 4, 4 * n_cols}, {2, m_rows, 4 * n_cols}});
    tmul_model::load_config(cfg);
    std::vector<int32_t> c((size_t)(m_rows * n_cols), 7);
    tmul_model::load(2, c.data(), 4 * n_cols);  // accumulates onto 7
    tmul_model::load(0, a_strided.data(), 40);
    tmul_model::load(1, b.data(), 4 * n_cols);
    const uint64_t before = tmul_model::dots_run();
    if (b_signed) tmul_model::dot_ss(2, 0, 1);
    else tmul_model::dot_su(2, 0, 1);
    EXPECT_EQ(tmul_model::dots_run(), before + 1);
    std::vector<int32_t> out((size_t)(m_rows * n_cols + 3), -1);
    tmul_model::store(2, out.data(), 4 * n_cols);
    const std::vector<int32_t> want = direct_dot(a, b, m_rows, k_bytes, n_cols, b_signed);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[i], want[i] + 7) << "signed B " << b_signed << " at " << i;
    EXPECT_EQ(out[want.size()], -1);  // nothing past the tile's rows
    tmul_model::zero(2);
    tmul_model::store(2, out.data(), 4 * n_cols);
    EXPECT_EQ(out[0], 0);
    tmul_model::release();
  }
}

TEST(TileModelDeathTest, UndefinedUsesStopAsTheHardwareDoes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int32_t buf[256] = {};
  EXPECT_DEATH(tmul_model::zero(0), "before ldtilecfg");
  EXPECT_DEATH(
      {
        tmul_model::load_config(config_of({{0, 16, 32}, {1, 4, 64}, {2, 16, 64}}));
        tmul_model::dot_su(2, 0, 1);  // A has 8 dwords per row, B 4 rows
      },
      "B's rows");
  EXPECT_DEATH(
      {
        tmul_model::load_config(config_of({{0, 16, 32}, {1, 8, 64}, {2, 8, 64}}));
        tmul_model::dot_su(2, 0, 1);  // C has 8 rows, A 16
      },
      "C's shape");
  EXPECT_DEATH(
      {
        tmul_model::load_config(config_of({{0, 16, 32}}));
        tmul_model::store(3, buf, 64);
      },
      "not configured");
}

bool runs_avx512() {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  return std::find(paths.begin(), paths.end(), CpuPath::Avx512) != paths.end();
}

class AmxModelTypes : public ::testing::TestWithParam<DType> {};

TEST_P(AmxModelTypes, MatchesTheAvx512PathBitForBitAndTheReference) {
  if (!runs_avx512()) {
    // The model-run kernel is AVX-512 code; without AVX-512 there is no AMX either.
    EXPECT_EQ(supported_cpu_paths().size(), 1u);
    return;
  }
  const DType t = GetParam();
  ThreadPool pool(1), pool2(2);
  const CpuPath was = active_cpu_path();
  // n_tok: 16 (one tile), 33 (two and a rest of 1), 70 (a token block of 64
  // = 4 tiles, then 6), 150 (a second full block and a 22-token one). n_in
  // 1280: staged chunks of 16 blocks end in a partial one. n_out 13 and 37:
  // padded groups and an unpaired last group.
  for (int64_t n_in : {256, 1280}) {
    for (int64_t n_out : {13, 37, 64}) {
      for (int64_t n_tok : {15, 16, 33, 70, 150}) {
        SCOPED_TRACE(testing::Message() << dtype_name(t) << " n_in=" << n_in << " n_out=" << n_out << " n_tok=" << n_tok);
        RandomWeight w(t, n_in, n_out, (uint32_t)(n_in + 7 * n_out + 31 * n_tok));
        auto pm = pack_matrix(w.view);
        ASSERT_TRUE(pm.ok()) << pm.status().message();
        std::mt19937 rng((uint32_t)n_tok);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> x((size_t)(n_in * n_tok));
        for (auto& v : x) v = nd(rng);
        for (size_t i = 0; i < x.size(); i += 89) x[i] *= 4.0f;
        std::vector<float> ref((size_t)(n_out * n_tok)), wide(ref.size(), NAN), tiles(ref.size(), NAN);
        matmul_ref_int8_acts(w.view, x.data(), ref.data(), n_tok);
        ASSERT_TRUE(set_cpu_path(CpuPath::Avx512).ok());
        matmul_packed(pm.value(), x.data(), wide.data(), n_tok, pool);
        const uint64_t dots = tmul_model::dots_run();
        packed::matmul_packed_on(&isa::amx_model::packed_run_range, pm.value(), x.data(), tiles.data(), n_tok, pool);
        // One thread: the tile unit ran wherever 16 tokens meet a pair of row
        // groups, for the types it takes (the rest run the 512-bit tiles).
        if (n_tok >= 16 && n_out > 8 && kernels::amx_int8_tiles_for(t)) EXPECT_GT(tmul_model::dots_run(), dots);
        else EXPECT_EQ(tmul_model::dots_run(), dots);
        EXPECT_EQ(std::memcmp(tiles.data(), wide.data(), tiles.size() * sizeof(float)), 0)
            << "the tile path differs from the AVX-512 path";
        // Two threads split the tokens and groups otherwise, here with the
        // activations staged once for the call: the same rows.
        std::vector<float> tiles2(ref.size(), NAN);
        packed::matmul_packed_on(&isa::amx_model::packed_run_range, pm.value(), x.data(), tiles2.data(), n_tok, pool2,
                                 &isa::amx_model::packed_stage_acts);
        EXPECT_EQ(std::memcmp(tiles2.data(), wide.data(), tiles2.size() * sizeof(float)), 0)
            << "the tile path on two threads differs from the AVX-512 path";
        double scale = 0;
        for (float v : ref) scale = std::max(scale, (double)std::fabs(v));
        for (size_t i = 0; i < tiles.size(); ++i) ASSERT_NEAR(tiles[i], ref[i], 1e-4 * scale + 1e-6) << "element " << i;
      }
    }
  }
  ASSERT_TRUE(set_cpu_path(was).ok());
}

INSTANTIATE_TEST_SUITE_P(AllTypes, AmxModelTypes,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q2_K, DType::Q3_K,
                                           DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The choice of tiles per weight type (amx_int8_tiles_for), as measured: one
// tile dot per 32-weight block runs on the tile unit; a scale per 16 weights
// keeps the 512-bit tiles; types the packed matmul does not take have none.
TEST(AmxTileChoice, FollowsTheScalesPerBlock) {
  struct Row {
    DType t;
    bool tile_unit;
  };
  const Row table[] = {
      {DType::Q4_0, true},   {DType::Q4_1, true},    {DType::Q5_0, true},  {DType::Q5_1, true},
      {DType::Q8_0, true},   {DType::Q4_K, true},    {DType::Q5_K, true},  {DType::IQ4_NL, true},
      {DType::IQ4_XS, true}, {DType::MXFP4, true},   {DType::Q6_K, false}, {DType::Q2_K, false},
      {DType::Q3_K, false},  {DType::F32, false},    {DType::F16, false},  {DType::BF16, false},
      {DType::Q8_1, false},  {DType::Q8_K, false},
  };
  for (const Row& r : table) EXPECT_EQ(kernels::amx_int8_tiles_for(r.t), r.tile_unit) << dtype_name(r.t);
  // Every type the tile unit takes is one the packed matmul takes.
  for (const Row& r : table)
    if (r.tile_unit) EXPECT_TRUE(packable(r.t)) << dtype_name(r.t);
}

// A tile path that writes wrong rows, for the start-up check to catch.
void broken_run_range(const packed::Problem& p, const detail::WorkRange& wr, WorkerScratch& ws) {
  kernels::kernel_table(CpuPath::Avx2).packed_tiles(p, wr, ws);
  if (wr.t0 == 0 && wr.r0 == 0) p.y[0] += 1.0f;
}

TEST(AmxStartupCheck, PassesTheModelRunTilesAndCatchesWrongOnes) {
  if (!runs_avx512()) {
    EXPECT_FALSE(kernels::check_amx_path().ok());  // no AMX path to check here
    return;
  }
  const uint64_t dots = tmul_model::dots_run();
  EXPECT_TRUE(kernels::check_tile_path(&isa::amx_model::packed_run_range, kernels::kernel_table(CpuPath::Avx512).packed_tiles).ok());
  EXPECT_GT(tmul_model::dots_run(), dots);
  const Status bad = kernels::check_tile_path(&broken_run_range, kernels::kernel_table(CpuPath::Avx512).packed_tiles);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("Q4_K"), std::string::npos) << bad.message();
  // The float tiles: the model's pass; f16 tiles off by 1e-3 of an output
  // (far above f32 rounding) do not.
  const kernels::KernelTable* model = kernels::amx_model_float_table();
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(kernels::check_float_tiles(*model, kernels::kernel_table(CpuPath::Avx512)).ok());
  kernels::KernelTable off = *model;
  off.matmul_f16 = [](const kernels::FloatMatmul& fm, const detail::WorkRange& wr, WorkerScratch& ws) {
    kernels::amx_model_float_table()->matmul_f16(fm, wr, ws);
    for (int64_t t = wr.t0; t < wr.t1; ++t)
      if (wr.r0 == 0) fm.y[t * fm.n_out] *= 1.0f + 1e-3f;
  };
  const Status bad_float = kernels::check_float_tiles(off, kernels::kernel_table(CpuPath::Avx512));
  EXPECT_FALSE(bad_float.ok());
  EXPECT_NE(bad_float.message().find("F16"), std::string::npos) << bad_float.message();
  // On a machine with AMX this is the real tile unit.
  const std::vector<CpuPath> paths = supported_cpu_paths();
  if (paths.back() == CpuPath::Amx) EXPECT_TRUE(kernels::check_amx_path().ok());
  else EXPECT_EQ(kernels::check_amx_path().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace stride
