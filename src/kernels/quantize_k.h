#pragma once
// f32 rows -> Q4_K / Q5_K blocks in the GGUF layout (kernels/quant_blocks.h),
// so that dequantize_row, the repack and the packed tiles read them as they
// read a file's. Each 32-element sub-block gets the scale and min that
// minimise its weighted squared error over a few candidate scales; the
// super-block then stores them as 6-bit multiples of two fp16 steps, and the
// elements are rounded again against the scales actually stored.
#include <cstdint>

#include "core/dtype.h"

namespace stride {

// Whether quantize_row_k writes this type (Q4_K, Q5_K).
bool quantizable_k(DType type);

// Quantizes n values of x (n a multiple of 256) into n / 256 blocks of `type`
// at dst (dtype_row_bytes(type, n) bytes). Does nothing for another type.
void quantize_row_k(DType type, const float* x, void* dst, int64_t n);

}  // namespace stride
