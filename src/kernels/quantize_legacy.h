#pragma once
// f32 rows -> Q4_0 / Q5_0 blocks in the GGUF layout (kernels/quant_blocks.h):
// one fp16 scale per 32 elements, x ~= d * (q - half), q in 0..2 * half - 1.
// Each block's scale is the least weighted squared error one over a few
// candidate grids (the largest magnitude on either end of the level range),
// and the elements are rounded again against the scale actually stored.
#include <cstdint>

#include "core/dtype.h"

namespace stride {

// Whether quantize_row_legacy writes this type (Q4_0, Q5_0).
bool quantizable_legacy(DType type);

// Quantizes n values of x (n a multiple of 32) into n / 32 blocks of `type`
// at dst (dtype_row_bytes(type, n) bytes). Does nothing for another type.
void quantize_row_legacy(DType type, const float* x, void* dst, int64_t n);

}  // namespace stride
