// The Q4_K / Q5_K quantizer against llama.cpp's: on seeded random rows and
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
#include "kernels/quantize_k.h"
#include "quantize_test_rows.h"

namespace stride {
namespace {

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  return quantize_test::round_trip(&quantize_row_k, t, x);
}

const std::map<std::string, DType> kTypes = {{"Q4_K", DType::Q4_K}, {"Q5_K", DType::Q5_K}};

TEST(QuantizeK, ErrorWithinLlamaCppOnRealAndRandomRows) {
  // A single row may lose a little to llama.cpp's candidate order; 10% at most.
  quantize_test::expect_error_within_llama_cpp(&quantize_row_k, kTypes, 1.10);
}

TEST(QuantizeK, LlamaCppBlocksDecodeAsGgufDecodesThem) { quantize_test::expect_llama_cpp_blocks_decode_as_gguf(kTypes); }

// Rows llama.cpp's search handles specially: all zero, constant, negative
// only, one outlier. Each decodes finite and close to the source.
TEST(QuantizeK, DegenerateRows) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<std::vector<float>> rows = {std::vector<float>(512, 0.0f), std::vector<float>(512, 0.25f),
                                          std::vector<float>(512, -0.75f)};
  std::vector<float> neg(512), outlier(512);
  for (float& v : neg) v = -std::fabs(g(rng));
  for (float& v : outlier) v = 0.01f * g(rng);
  outlier[77] = 5.0f;
  rows.push_back(neg);
  rows.push_back(outlier);
  for (const auto& [name, type] : kTypes) {
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto y = round_trip(type, rows[r]);
      double max_abs = 0, max_err = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << name << " row " << r;
        max_abs = std::max(max_abs, (double)std::fabs(rows[r][i]));
        max_err = std::max(max_err, (double)std::fabs(y[i] - rows[r][i]));
      }
      // Half a step of the coarsest grid (15 levels over the block's range).
      EXPECT_LE(max_err, max_abs / 15.0 + 1e-6) << name << " row " << r;
      if (max_abs == 0) EXPECT_EQ(max_err, 0.0) << name;
    }
  }
}

TEST(QuantizeK, OnlyQ4KAndQ5K) {
  EXPECT_TRUE(quantizable_k(DType::Q4_K));
  EXPECT_TRUE(quantizable_k(DType::Q5_K));
  EXPECT_FALSE(quantizable_k(DType::Q6_K));
  EXPECT_FALSE(quantizable_k(DType::Q8_0));
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(16, 0x5A);
  quantize_row_k(DType::Q6_K, x.data(), out.data(), 256);  // not a type it writes: untouched
  for (uint8_t b : out) EXPECT_EQ(b, 0x5A);
}

}  // namespace
}  // namespace stride
