// Shared by the weight quantizer tests: the llama.cpp oracle rows
// (tests/data/generated/head_quant/rows.json, from
// scripts/oracles/head_quant_rows.py) and the error measures they compare.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
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

}  // namespace stride::quantize_test
