#pragma once
// A non-owning view of a weight tensor, wherever its bytes live (mmap or buffer).
#include <array>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace stride {

struct TensorView {
  std::string name;
  DType type = DType::F32;
  int n_dims = 0;
  // ggml order: ne[0] is the contiguous row length. A 2-D weight is
  // [ne[1] rows, ne[0] columns] and computes y = W x with x of length ne[0].
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  const uint8_t* data = nullptr;
  int64_t nbytes = 0;

  bool valid() const { return data != nullptr; }
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  int64_t cols() const { return ne[0]; }
  int64_t row_bytes() const { return dtype_row_bytes(type, ne[0]); }
  const uint8_t* row(int64_t r) const { return data + r * row_bytes(); }
};

}  // namespace stride
