#pragma once
// Scalar reference dequantization for every supported weight type.
// Block layouts follow GGUF (ggml) exactly.
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace stride {

// Decodes n elements (a multiple of the type's block size) starting at `src`.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

// Dequantizes a whole row r of a 2-D weight.
void dequantize_tensor_row(const TensorView& t, int64_t r, float* dst);

}  // namespace stride
