// Shared by the weight quantizer tests: the llama.cpp oracle rows
// (tests/data/generated/head_quant/rows.json, from
// scripts/oracles/head_quant_rows.py) and the error measures they compare.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/dequantize.h"

namespace stride::quantize_test {

inline std::vector<uint8_t> from_hex(const std::string& h) {
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = (uint8_t)std::stoi(h.substr(2 * i, 2), nullptr, 16);
  return out;
}

using QuantizeRow = void (*)(DType, const float*, void*, int64_t);

// Ours: quantized by `quantize`, then decoded by the reference dequantizer.
inline std::vector<float> round_trip(QuantizeRow quantize, DType t, const std::vector<float>& x) {
  const int64_t n = (int64_t)x.size();
  std::vector<uint8_t> q((size_t)dtype_row_bytes(t, n), 0xAB);
  quantize(t, x.data(), q.data(), n);
  std::vector<float> y((size_t)n);
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

inline double sum_sq_error(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
  return s;
}

inline nlohmann::json load_rows() {
  const std::string path = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/head_quant/rows.json";
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path << " missing: run scripts/setup";
  if (!f.good()) return {};
  return nlohmann::json::parse(f);
}

using TypesByName = std::map<std::string, DType>;

// Our error against llama.cpp's on every oracle row: within `row_limit` of
// llama.cpp's RMSE on each row, and within 5% summed per source and type.
inline void expect_error_within_llama_cpp(QuantizeRow quantize, const TypesByName& types, double row_limit) {
  const auto j = load_rows();
  ASSERT_TRUE(j.contains("rows"));
  ASSERT_GE(j["rows"].size(), 40u);
  // Per source and type: squared errors summed over the rows (ours, llama.cpp's).
  std::map<std::string, std::pair<double, double>> totals;
  for (const auto& row : j["rows"]) {
    const std::vector<float> x = row["values"].get<std::vector<float>>();
    for (const auto& [name, type] : types) {
      ASSERT_TRUE(row["llama"].contains(name)) << "rows.json predates " << name << ": run scripts/setup";
      const std::vector<float> theirs = row["llama"][name]["dequantized"].get<std::vector<float>>();
      ASSERT_EQ(theirs.size(), x.size());
      const double ours_e = sum_sq_error(round_trip(quantize, type, x), x), theirs_e = sum_sq_error(theirs, x);
      EXPECT_LE(std::sqrt(ours_e), row_limit * std::sqrt(theirs_e) + 1e-12)
          << name << " " << row["source"] << " row " << row["index"];
      auto& t = totals[name + " " + row["source"].get<std::string>()];
      t.first += ours_e;
      t.second += theirs_e;
    }
  }
  for (const auto& [key, t] : totals) {
    const double ratio = std::sqrt(t.first / t.second);
    std::printf("%-70s RMSE ours / llama.cpp = %.4f\n", key.c_str(), ratio);
    EXPECT_LE(ratio, 1.05) << key;
  }
}

// llama.cpp's blocks decode here exactly as the `gguf` package decodes them.
inline void expect_llama_cpp_blocks_decode_as_gguf(const TypesByName& types) {
  const auto j = load_rows();
  ASSERT_TRUE(j.contains("rows"));
  for (const auto& row : j["rows"]) {
    for (const auto& [name, type] : types) {
      ASSERT_TRUE(row["llama"].contains(name)) << "rows.json predates " << name << ": run scripts/setup";
      const auto bytes = from_hex(row["llama"][name]["bytes_hex"]);
      const std::vector<float> want = row["llama"][name]["dequantized"].get<std::vector<float>>();
      ASSERT_EQ((int64_t)bytes.size(), dtype_row_bytes(type, (int64_t)want.size()));
      std::vector<float> y(want.size());
      dequantize_row(type, bytes.data(), y.data(), (int64_t)y.size());
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << name << " " << row["source"] << " [" << i << "]";
    }
  }
}

}  // namespace stride::quantize_test
