#pragma once
// Random quantized weights for the kernel tests: random bytes with finite
// fp16 scales, as a 2-D TensorView.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/tensor.h"

namespace stride {

// Offsets of the fp16 scale fields inside one block; they get finite values.
inline std::vector<int> half_fields(DType t) {
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

// A 2-D weight [n_out, n_in] over `bytes`.
inline TensorView matrix_view(DType t, int64_t n_in, int64_t n_out, const std::vector<uint8_t>& bytes) {
  TensorView view;
  view.name = "w";
  view.type = t;
  view.n_dims = 2;
  view.ne = {n_in, n_out, 1, 1};
  view.data = bytes.data();
  view.nbytes = (int64_t)bytes.size();
  return view;
}

// Random bytes with sane fp16 scales. Q8_0 quants include -128 on purpose
// (the sign trick must handle it); Q6_K scales span the whole int8 range.
struct RandomWeight {
  std::vector<uint8_t> bytes;
  TensorView view;
  RandomWeight(DType t, int64_t n_in, int64_t n_out, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
    const DTypeInfo* info = dtype_info(t);
    const int64_t n_blocks = n_in / info->block_elems * n_out;
    bytes.resize((size_t)(n_blocks * info->block_bytes));
    for (auto& b : bytes) b = (uint8_t)(rng() & 0xFF);
    for (int64_t b = 0; b < n_blocks; ++b) {
      uint8_t* blk = bytes.data() + b * info->block_bytes;
      for (int off : half_fields(t)) {
        const uint16_t h = fp32_to_fp16(ud(rng) * 0.05f);
        std::memcpy(blk + off, &h, 2);
      }
      if (t == DType::MXFP4) blk[0] = (uint8_t)(b % 3 == 0 ? b % 2 : 118 + rng() % 8);  // subnormal and normal scales
    }
    view = matrix_view(t, n_in, n_out, bytes);
  }
};

}  // namespace stride
