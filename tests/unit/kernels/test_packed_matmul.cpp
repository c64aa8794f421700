// Repacked (8-row interleaved) quantized matmul vs the scalar int8-activation
// reference, for every packable type, odd shapes and 1/2/7 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/dequantize.h"
#include "kernels/kernel_paths.h"
#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "kernels/packed_matrix.h"
#include "kernels/packed_tiles.h"
#include "kernels/quant_act.h"
#include "random_weight.h"

namespace stride {
namespace {

std::vector<float> random_acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)n);
  for (auto& v : x) v = nd(rng);
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 3.0f;  // outliers
  // A block of extremes: every |q| = 127, the largest int16 partial sums.
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) x[(size_t)i] = (i % 3 == 0) ? -5.0f : 5.0f;
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

class PackedTypes : public ::testing::TestWithParam<DType> {};

TEST_P(PackedTypes, MatchesInt8Reference) {
  const DType t = GetParam();
  ASSERT_TRUE(packable(t));
  const int64_t blk = dtype_info(t)->block_elems;
  struct Case {
    int64_t n_in, n_out, n_tok;
    std::unique_ptr<RandomWeight> w;
    PackedMatrix pm;
    std::vector<float> x, ref;
  };
  std::vector<Case> cases;
  // n_in 1280: 40 blocks, two full chunks of staged blocks and a partial one
  // (isa/packed_tiles_staged.h, isa/packed_tiles_wide.h stage 16 at a time).
  // n_in 1024: activation rows a multiple of 1 KiB, which quantize_acts pads.
  for (int64_t n_in : {32, 96, 256, 640, 1024, 1280, 1536}) {
    if (n_in % blk != 0) continue;
    for (int64_t n_out : {1, 3, 8, 13, 37, 257}) {
      // 1-3: the streaming (decode) tiles; from 4 on, the staged tiles (all
      // types but Q8_0 on the AVX2 path): there 4 is one full tile and 5-7 a
      // full tile and a rest of 1-3.
      // 11 and 33: a full 8-token tile and a narrow rest in the same token
      // block; 70: a second token block of 6.
      for (int64_t n_tok : {1, 2, 3, 4, 5, 6, 7, 11, 33, 70}) {
        if (n_in * n_out * n_tok > 3'000'000) continue;
        Case c{n_in, n_out, n_tok, nullptr, {}, {}, {}};
        c.w = std::make_unique<RandomWeight>(t, n_in, n_out, (uint32_t)(n_in * 31 + n_out * 7 + n_tok));
        auto pm = pack_matrix(c.w->view);
        ASSERT_TRUE(pm.ok()) << pm.status().message();
        c.pm = std::move(pm.value());
        c.x = random_acts(n_in * n_tok, (uint32_t)(n_out + 1000 * n_tok));
        c.ref.resize((size_t)(n_out * n_tok));
        matmul_ref_int8_acts(c.w->view, c.x.data(), c.ref.data(), n_tok);
        cases.push_back(std::move(c));
      }
    }
  }
  ASSERT_GT(cases.size(), 20u);
  // Every kernel path this CPU runs (packed_tiles_*.cpp), each against the
  // reference and bit for bit against the first (integer sums are exact).
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  std::vector<std::vector<float>> first_path(cases.size());
  for (const CpuPath path : paths)
  for (int threads : {1, 2, 7}) {
    ASSERT_TRUE(set_cpu_path(path).ok());
    ThreadPool pool(threads);
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      if (threads == 7 && ci % 3 != 0) continue;
      const Case& c = cases[ci];
      std::vector<float> y(c.ref.size(), NAN);
      matmul_packed(c.pm, c.x.data(), y.data(), c.n_tok, pool);
      SCOPED_TRACE(testing::Message() << dtype_name(t) << " n_in=" << c.n_in << " n_out=" << c.n_out
                                      << " n_tok=" << c.n_tok << " threads=" << threads
                                      << " path=" << cpu_path_name(path));
      if (first_path[ci].empty()) first_path[ci] = y;
      else EXPECT_EQ(std::memcmp(first_path[ci].data(), y.data(), y.size() * sizeof(float)), 0)
               << "differs from the " << cpu_path_name(paths[0]) << " path";
      for (float v : y) ASSERT_TRUE(std::isfinite(v));
      EXPECT_LT(rel_error(y, c.ref), 1e-5);
      // Every element, not only the norm: a wrong row must not hide.
      double scale = 0;
      for (float v : c.ref) scale = std::max(scale, (double)std::fabs(v));
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], c.ref[i], 1e-4 * scale + 1e-6) << "element " << i;
    }
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PackedTypes,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                           DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                                           DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS,
                                           DType::MXFP4),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(PackedMatrix, LayoutSizes) {
  // Bits per weight are the GGUF ones: a group is 8 rows of the original bytes.
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    RandomWeight w(t, 64, 16, 1);
    auto pm = pack_matrix(w.view);
    ASSERT_TRUE(pm.ok());
    EXPECT_EQ(pm.value().group_bytes, 8 * w.view.row_bytes()) << dtype_name(t);
    EXPECT_EQ(pm.value().n_groups, 2);
  }
  RandomWeight w(DType::Q4_1, 64, 9, 2);
  auto pm = pack_matrix(w.view);
  ASSERT_TRUE(pm.ok());
  EXPECT_EQ(pm.value().n_groups, 2);  // 9 rows: one full group and a padded one
}

TEST(PackedMatrix, HandComputedProduct) {
  // Q8_0 with d = 1 and integer activations (max 127 -> d_x = 1): exact.
  std::vector<uint8_t> blocks(3 * 34, 0);
  const uint16_t one = fp32_to_fp16(1.0f);
  for (int r = 0; r < 3; ++r) {
    std::memcpy(blocks.data() + 34 * r, &one, 2);
    for (int j = 0; j < 32; ++j)
      blocks[(size_t)(34 * r + 2 + j)] = (uint8_t)(int8_t)(r == 0 ? 1 : r == 1 ? (j % 2 ? -2 : 3) : -128);
  }
  TensorView w;
  w.type = DType::Q8_0;
  w.ne = {32, 3, 1, 1};
  w.data = blocks.data();
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[(size_t)j] = (float)(j == 5 ? 127 : j);
  float e0 = 0, e1 = 0, e2 = 0;
  for (int j = 0; j < 32; ++j) {
    e0 += x[(size_t)j];
    e1 += (j % 2 ? -2.0f : 3.0f) * x[(size_t)j];
    e2 += -128.0f * x[(size_t)j];
  }
  auto pm = pack_matrix(w);
  ASSERT_TRUE(pm.ok());
  ThreadPool pool(2);
  float y[3];
  matmul_packed(pm.value(), x.data(), y, 1, pool);
  EXPECT_EQ(y[0], e0);
  EXPECT_EQ(y[1], e1);
  EXPECT_EQ(y[2], e2);
}

// The packed copies of ws, in order.
std::vector<PackedMatrix> pack_all(std::initializer_list<const RandomWeight*> ws) {
  std::vector<PackedMatrix> pms;
  for (const RandomWeight* w : ws) {
    auto pm = pack_matrix(w->view);
    EXPECT_TRUE(pm.ok());
    if (pm.ok()) pms.push_back(std::move(pm.value()));
  }
  return pms;
}

// matmul_packed_multi over pms in one dispatch: each one's [n_tok, n_out].
std::vector<std::vector<float>> multi_outputs(const std::vector<PackedMatrix>& pms, const std::vector<float>& x,
                                              int64_t n_tok, ThreadPool& pool) {
  std::vector<std::vector<float>> ys(pms.size());
  std::vector<const PackedMatrix*> ws;
  std::vector<float*> yp;
  for (size_t i = 0; i < pms.size(); ++i) {
    ys[i].assign((size_t)(pms[i].n_out * n_tok), NAN);
    ws.push_back(&pms[i]);
    yp.push_back(ys[i].data());
  }
  matmul_packed_multi(ws.data(), yp.data(), (int)pms.size(), x.data(), n_tok, pool);
  return ys;
}

// The int8-activation reference of each of ws.
std::vector<std::vector<float>> reference_outputs(std::initializer_list<const RandomWeight*> ws,
                                                  const std::vector<float>& x, int64_t n_tok) {
  std::vector<std::vector<float>> refs;
  for (const RandomWeight* w : ws) {
    refs.emplace_back((size_t)(w->view.rows() * n_tok));
    matmul_ref_int8_acts(w->view, x.data(), refs.back().data(), n_tok);
  }
  return refs;
}

TEST(PackedMatrix, MultiMatchesSingle) {
  // Q, K, V-like: different types and row counts, one row length, one dispatch.
  const int64_t n_in = 256;
  RandomWeight a(DType::Q5_0, n_in, 37, 11), b(DType::Q8_0, n_in, 16, 12), c(DType::Q4_K, n_in, 9, 13);
  const std::vector<PackedMatrix> pms = pack_all({&a, &b, &c});
  ASSERT_EQ(pms.size(), 3u);
  for (int threads : {1, 2, 7}) {
    ThreadPool pool(threads);
    for (int64_t n_tok : {1, 5, 70}) {
      const auto x = random_acts(n_in * n_tok, (uint32_t)n_tok);
      const auto ys = multi_outputs(pms, x, n_tok, pool);
      const auto refs = reference_outputs({&a, &b, &c}, x, n_tok);
      for (int i = 0; i < 3; ++i) EXPECT_LT(rel_error(ys[i], refs[i]), 1e-5) << i << " " << n_tok;
    }
  }
}

// A dispatch stages its activations once for every chunk and matrix
// (packed_tiles.h, StagedActs): matrices whose layouts read different staged
// parts (Q4_K: factors and mins; Q6_K and Q4_0: the activations + 128 too;
// Q8_0: none on the AVX2 path), tokens over several token blocks, and thread
// counts that split by rows (chunks on token block boundaries, reading the
// shared copy) or by tokens (chunks that start mid-block stage their own).
// On every CPU path against the reference, and bit for bit against the same
// path staging per chunk (matmul_packed_on without a StageActsFn).
TEST(PackedMatrix, ActivationsStagedOncePerDispatch) {
  const int64_t n_in = 512;
  RandomWeight a(DType::Q4_K, n_in, 203, 31), b(DType::Q6_K, n_in, 40, 32), c(DType::Q4_0, n_in, 9, 33),
      d(DType::Q8_0, n_in, 16, 34);
  const std::vector<PackedMatrix> pms = pack_all({&a, &b, &c, &d});
  ASSERT_EQ(pms.size(), 4u);
  const std::vector<CpuPath> paths = supported_cpu_paths();
  for (const CpuPath path : paths) {
    ASSERT_TRUE(set_cpu_path(path).ok());
    const kernels::KernelTable& k = kernels::kernel_table(path);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t n_tok : {4, 70, 130}) {
        const auto x = random_acts(n_in * n_tok, (uint32_t)(200 + n_tok));
        const auto refs = reference_outputs({&a, &b, &c, &d}, x, n_tok);
        // All four in one dispatch (row split), and each alone: the small
        // ones split by tokens on 2+ threads.
        const auto ys = multi_outputs(pms, x, n_tok, pool);
        for (size_t i = 0; i < pms.size(); ++i) {
          SCOPED_TRACE(testing::Message() << dtype_name(pms[i].type) << " n_tok=" << n_tok << " threads=" << threads
                                          << " path=" << cpu_path_name(path));
          std::vector<float> alone(ys[i].size(), NAN), per_chunk(ys[i].size(), NAN);
          packed::matmul_packed_on(k.packed_tiles, pms[i], x.data(), alone.data(), n_tok, pool, k.packed_stage_acts);
          packed::matmul_packed_on(k.packed_tiles, pms[i], x.data(), per_chunk.data(), n_tok, pool);
          double scale = 0;
          for (float v : refs[i]) scale = std::max(scale, (double)std::fabs(v));
          for (size_t j = 0; j < ys[i].size(); ++j) {
            ASSERT_NEAR(ys[i][j], refs[i][j], 1e-4 * scale + 1e-6) << "element " << j;
            ASSERT_NEAR(alone[j], refs[i][j], 1e-4 * scale + 1e-6) << "element " << j;
          }
          EXPECT_EQ(std::memcmp(ys[i].data(), per_chunk.data(), ys[i].size() * sizeof(float)), 0);
          EXPECT_EQ(std::memcmp(alone.data(), per_chunk.data(), alone.size() * sizeof(float)), 0);
        }
      }
    }
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

TEST(PackedMatrix, DecodeStepsCoverEveryRowOnce) {
  // Decode (1-3 tokens) on 2+ threads streams the groups in steps of about
  // 64 KiB (packed_matmul.cpp): matrices of several steps, a step that spans
  // two matrices, and a last partial step, against the reference and bit for
  // bit against one thread.
  const int64_t n_in = 256;
  RandomWeight a(DType::Q4_0, n_in, 4099, 21), b(DType::Q6_K, n_in, 1203, 22), c(DType::Q4_K, n_in, 517, 23);
  const std::vector<PackedMatrix> pms = pack_all({&a, &b, &c});
  ASSERT_EQ(pms.size(), 3u);
  ASSERT_GT(pms[0].n_groups * pms[0].group_bytes, 4 * (64 << 10));
  for (int64_t n_tok : {1, 3}) {
    const auto x = random_acts(n_in * n_tok, (uint32_t)(100 + n_tok));
    const auto refs = reference_outputs({&a, &b, &c}, x, n_tok);
    std::vector<std::vector<float>> single;
    for (int threads : {1, 2, 3, 7}) {
      ThreadPool pool(threads);
      const auto ys = multi_outputs(pms, x, n_tok, pool);
      for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE(testing::Message() << "matrix " << i << " n_tok=" << n_tok << " threads=" << threads);
        for (float v : ys[i]) ASSERT_TRUE(std::isfinite(v));
        EXPECT_LT(rel_error(ys[i], refs[i]), 1e-5);
        if (threads > 1) EXPECT_EQ(std::memcmp(single[i].data(), ys[i].data(), ys[i].size() * sizeof(float)), 0);
      }
      if (threads == 1) single = ys;
    }
  }
}

// A token's output must not depend on how many tokens share the call (the
// tile it lands in): the same rows, bit for bit, for every prefix length, on
// every CPU path (1-3 tokens stream, 4+ go through the staged tiles).
// n_in 1280: 40 blocks, so the staged chunks of 16 end in a partial one.
TEST(PackedMatrix, EachTokenIsIndependentOfTheTileItSitsIn) {
  const int64_t n_in = 1280, n_out = 24, n_all = 40;
  ThreadPool pool(1);
  const std::vector<CpuPath> paths = supported_cpu_paths();
  for (const CpuPath path : paths) {
    ASSERT_TRUE(set_cpu_path(path).ok());
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K, DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4}) {
      RandomWeight w(t, n_in, n_out, 5);
      auto pm = pack_matrix(w.view);
      ASSERT_TRUE(pm.ok());
      const auto x = random_acts(n_in * n_all, 77);
      std::vector<float> all((size_t)(n_all * n_out));
      matmul_packed(pm.value(), x.data(), all.data(), n_all, pool);
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 17, 33}) {
        std::vector<float> part((size_t)(n * n_out));
        matmul_packed(pm.value(), x.data(), part.data(), n, pool);
        for (int64_t tok = 0; tok < n; ++tok) {
          EXPECT_EQ(std::memcmp(part.data() + tok * n_out, all.data() + tok * n_out, sizeof(float) * n_out), 0)
              << dtype_name(t) << " path " << cpu_path_name(path) << ": token " << tok << " of a " << n
              << "-token call differs from the " << n_all << "-token call";
        }
      }
    }
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

// The same for the unpacked paths (float weights, and quantized weights that
// are not repacked): matmul() on a prefix equals the full call's rows.
TEST(Matmul, EachTokenIsIndependentOfHowManyShareTheCall) {
  const int64_t n_in = 512, n_out = 24, n_all = 40;
  ThreadPool pool(1);
  for (DType t : {DType::F32, DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
    std::vector<uint8_t> bytes;
    if (t == DType::F32 || t == DType::F16) {
      const size_t esz = t == DType::F32 ? 4 : 2;
      bytes.resize((size_t)(n_in * n_out) * esz);
      std::mt19937 rng(9);
      std::normal_distribution<float> nd(0.0f, 0.05f);
      for (int64_t i = 0; i < n_in * n_out; ++i) {
        const float v = nd(rng);
        if (t == DType::F32) std::memcpy(bytes.data() + i * 4, &v, 4);
        else { const uint16_t h = fp32_to_fp16(v); std::memcpy(bytes.data() + i * 2, &h, 2); }
      }
    } else {
      bytes = RandomWeight(t, n_in, n_out, 5).bytes;
    }
    const TensorView view = matrix_view(t, n_in, n_out, bytes);
    const auto x = random_acts(n_in * n_all, 78);
    std::vector<float> all((size_t)(n_all * n_out));
    matmul(view, x.data(), all.data(), n_all, pool);
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 17, 33}) {
      std::vector<float> part((size_t)(n * n_out));
      matmul(view, x.data(), part.data(), n, pool);
      for (int64_t tok = 0; tok < n; ++tok) {
        EXPECT_EQ(std::memcmp(part.data() + tok * n_out, all.data() + tok * n_out, sizeof(float) * n_out), 0)
            << dtype_name(t) << ": token " << tok << " of a " << n << "-token call differs from the " << n_all
            << "-token call";
      }
    }
  }
}

TEST(QuantizeActs, HalfSumsMatchQuants) {
  // Q6_K's offset uses the int16 pair (Σq[0..15], Σq[16..31]) of each block.
  const int64_t n_in = 96, n_tok = 3;
  const auto x = random_acts(n_in * n_tok, 5);
  QuantizedActs fast, ref;
  quantize_acts(x.data(), n_tok, n_in, fast);
  quantize_acts_ref(x.data(), n_tok, n_in, ref);
  EXPECT_EQ(fast.hs, ref.hs);
  EXPECT_EQ(fast.qs, ref.qs);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t b = 0; b < fast.row_blocks; ++b) {
      int lo = 0, hi = 0;
      for (int j = 0; j < 32; ++j) (j < 16 ? lo : hi) += fast.q_row(t)[b * 32 + j];
      EXPECT_EQ((int16_t)(fast.hs_row(t)[b] & 0xFFFF), lo) << t << " " << b;
      EXPECT_EQ((int16_t)(fast.hs_row(t)[b] >> 16), hi) << t << " " << b;
      EXPECT_EQ(fast.qs_row(t)[b], lo + hi) << t << " " << b;  // Q4_0 / Q5_0 offsets
    }
}

TEST(PackedMatrix, RejectsBadInput) {
  RandomWeight f(DType::Q4_1, 64, 4, 3);
  TensorView v = f.view;
  v.type = DType::F32;
  v.ne = {12, 4, 1, 1};  // float rows that are not whole 8-element groups
  EXPECT_EQ(pack_matrix(v).status().code(), StatusCode::kUnsupported);
  EXPECT_FALSE(packable(DType::Q8_1));
  TensorView empty = f.view;
  empty.data = nullptr;
  EXPECT_EQ(pack_matrix(empty).status().code(), StatusCode::kInvalidArgument);
  TensorView odd = f.view;
  odd.ne = {48, 4, 1, 1};  // not a whole number of 32-element blocks
  EXPECT_EQ(pack_matrix(odd).status().code(), StatusCode::kInvalidArgument);
  RandomWeight k(DType::Q4_K, 256, 2, 4);
  TensorView short_k = k.view;
  short_k.nbytes = 100;  // fewer bytes than the shape needs
  EXPECT_EQ(pack_matrix(short_k).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stride
