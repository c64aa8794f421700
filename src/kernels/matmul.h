#pragma once
// Weight x activation products, for every supported weight type.
#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace stride {

// Y = X · Wᵀ.
//   w: [n_out rows, n_in cols] in any supported DType (w.ne[0] == n_in)
//   x: [n_tok, n_in] f32, row-major
//   y: [n_tok, n_out] f32, row-major (overwritten)
// Quantized weights use int8-quantized activations and integer dot products
// (AVX2); float weights use FMA. n_tok == 1 is the decode (matvec) path.
void matmul(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool);

// Scalar reference: dequantize each row to f32 and accumulate in double.
void matmul_ref(const TensorView& w, const float* x, float* y, int64_t n_tok);

}  // namespace stride
