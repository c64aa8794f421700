#pragma once
// Weights for the matmul micro-benchmarks: random bytes with finite fp16
// scales (the kernels' speed does not depend on the values); and normal
// floats for activations, keys and values.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/tensor.h"

namespace stride::bench {

struct Shape {
  const char* name;
  int64_t n_in, n_out;
};

inline std::vector<float> random_normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  std::generate(v.begin(), v.end(), [&] { return normal(rng); });
  return v;
}

inline std::vector<uint8_t> random_weight(DType t, int64_t n_in, int64_t n_out) {
  const DTypeInfo* info = dtype_info(t);
  const int64_t n_blocks = n_in / info->block_elems * n_out;
  std::vector<uint8_t> bytes((size_t)(n_blocks * info->block_bytes));
  std::mt19937 rng(42);
  for (auto& b : bytes) b = (uint8_t)(rng() & 0xFF);
  const uint16_t h = fp32_to_fp16(0.01f);
  auto set_half = [&](int off) {
    for (int64_t b = 0; b < n_blocks; ++b) std::memcpy(bytes.data() + b * info->block_bytes + off, &h, 2);
  };
  switch (t) {
    case DType::F16: case DType::BF16: set_half(0); break;  // every element finite
    case DType::F32:
      for (size_t i = 0; i < bytes.size(); i += 4) { const float v = 0.01f; std::memcpy(&bytes[i], &v, 4); }
      break;
    case DType::Q6_K: set_half(208); break;
    case DType::Q2_K: set_half(80); set_half(82); break;
    case DType::Q3_K: set_half(108); break;
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: set_half(0); set_half(2); break;
    default: set_half(0); break;
  }
  return bytes;
}

// A 2-D weight [n_out, n_in] over bytes.
inline TensorView weight_view(DType t, Shape shape, const std::vector<uint8_t>& bytes) {
  TensorView w;
  w.type = t;
  w.n_dims = 2;
  w.ne = {shape.n_in, shape.n_out, 1, 1};
  w.data = bytes.data();
  w.nbytes = (int64_t)bytes.size();
  return w;
}

}  // namespace stride::bench
