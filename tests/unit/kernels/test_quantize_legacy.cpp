// The Q4_0 / Q5_0 quantizer against llama.cpp's: on seeded random rows and
// real output-head rows (tests/data/generated/head_quant/rows.json, from
// scripts/oracles/head_quant_rows.py), its error stays within 5% of
// llama.cpp's on the same rows, and llama.cpp's own blocks decode here as the
// `gguf` package decodes them (the layout both sides write).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequantize.h"
#include "kernels/quantize_legacy.h"
#include "quantize_test_rows.h"

namespace stride {
namespace {

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  return quantize_test::round_trip(&quantize_row_legacy, t, x);
}

const std::map<std::string, DType> kTypes = {{"Q4_0", DType::Q4_0}, {"Q5_0", DType::Q5_0}};

TEST(QuantizeLegacy, ErrorWithinLlamaCppOnRealAndRandomRows) {
  quantize_test::expect_error_within_llama_cpp(&quantize_row_legacy, kTypes, 1.05);
}

TEST(QuantizeLegacy, LlamaCppBlocksDecodeAsGgufDecodesThem) { quantize_test::expect_llama_cpp_blocks_decode_as_gguf(kTypes); }

// All zero, constant, negative only, one outlier, and a 32-element row: each
// decodes finite, within half a step of a grid near the block's, and
// all-zero exactly.
TEST(QuantizeLegacy, DegenerateRows) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<std::vector<float>> rows = {std::vector<float>(96, 0.0f), std::vector<float>(96, 0.25f),
                                          std::vector<float>(96, -0.75f)};
  std::vector<float> neg(96), outlier(96), one(32);
  for (float& v : neg) v = -std::fabs(g(rng));
  for (float& v : outlier) v = 0.01f * g(rng);
  for (float& v : one) v = g(rng);
  outlier[77] = 5.0f;
  rows.push_back(neg);
  rows.push_back(outlier);
  rows.push_back(one);
  for (const auto& [name, type] : kTypes) {
    const double half = type == DType::Q4_0 ? 8.0 : 16.0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto y = round_trip(type, rows[r]);
      for (size_t b = 0; b < y.size(); b += 32) {
        double max_abs = 0, max_err = 0;
        for (size_t i = b; i < b + 32; ++i) {
          ASSERT_TRUE(std::isfinite(y[i])) << name << " row " << r;
          max_abs = std::max(max_abs, (double)std::fabs(rows[r][i]));
          max_err = std::max(max_err, (double)std::fabs(y[i] - rows[r][i]));
        }
        // Half a step of a grid at most a third coarser than the plain peak / half one.
        EXPECT_LE(max_err, 0.5 * max_abs / (0.75 * half) + 1e-6) << name << " row " << r << " block " << b / 32;
        if (max_abs == 0) {
          EXPECT_EQ(max_err, 0.0) << name;
        }
      }
    }
  }
}

TEST(QuantizeLegacy, OnlyQ4_0AndQ5_0) {
  EXPECT_TRUE(quantizable_legacy(DType::Q4_0));
  EXPECT_TRUE(quantizable_legacy(DType::Q5_0));
  EXPECT_FALSE(quantizable_legacy(DType::Q4_1));
  EXPECT_FALSE(quantizable_legacy(DType::Q8_0));
  EXPECT_FALSE(quantizable_legacy(DType::Q4_K));
  std::vector<float> x(32, 1.0f);
  std::vector<uint8_t> out(34, 0x5A);
  quantize_row_legacy(DType::Q8_0, x.data(), out.data(), 32);  // not a type it writes: untouched
  for (uint8_t b : out) EXPECT_EQ(b, 0x5A);
  quantize_row_legacy(DType::Q4_0, x.data(), out.data(), 40);  // not whole blocks: untouched
  for (uint8_t b : out) EXPECT_EQ(b, 0x5A);
}

}  // namespace
}  // namespace stride
