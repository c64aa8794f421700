#pragma once
// Internal entry points of the matmul fast paths (see matmul.h for shapes).
#include <immintrin.h>

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/simd/reduce.h"

namespace stride::detail {

// Quantized weights: int8 activations and integer dot products.
void matmul_quantized(const TensorView& w, const float* x, float* y, int64_t n_tok,
                      ThreadPool& pool);
// F32 / F16 / BF16 weights: FMA on f32.
void matmul_float(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool);

// Splits n_out rows x n_tok tokens into the part of thread ti of nt: a row range
// (aligned to row_align) when there are enough rows, otherwise a token range.
struct WorkRange {
  int64_t r0, r1, t0, t1;
};
WorkRange split_work(int64_t n_out, int64_t n_tok, int64_t row_align, int ti, int nt);

// Chunks to hand the pool for one call: a few per thread, so the threads that
// are running take over the share of one the OS has descheduled.
int work_chunks(int64_t n_out, int64_t n_tok, int64_t row_align, int n_threads);

}  // namespace stride::detail
