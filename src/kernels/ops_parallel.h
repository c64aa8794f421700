#pragma once
// Batch versions of the element-wise ops, split over a ThreadPool. Work is cut
// at row boundaries (or at multiples of 8 elements for flat ops), so every
// element takes the same path through the serial kernel as it would in one
// call: the results are bit-identical to the serial kernels for any thread
// count. Small inputs run on the caller (waking workers would cost more).
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/rope_table.h"

namespace stride {

// rmsnorm (see ops.h), rows split over the pool.
void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps,
             ThreadPool& pool);

// Sandwich norm and residual add in one pass per row:
//   o[r] = rmsnorm(o[r]) * w; x[r] += o[r].   o, x: [n_rows, n]
void rmsnorm_add(float* o, const float* w, float* x, int64_t n_rows, int64_t n, float eps,
                 ThreadPool& pool);

// y[i] += x[i] over n elements.
void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool);

// y[r, :] += b for every row: y [n_rows, n], b [n] (a bias).
void add_rows(float* y, const float* b, int64_t n_rows, int64_t n, ThreadPool& pool);

// Gated activations (see ops.h) over n elements. out may alias gate.
void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool);
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool);

// rope of queries and keys at the same positions, tokens split over the pool.
//   q: [n_tok, n_head_q, head_dim]; k: [n_tok, n_head_k, head_dim] (may be null)
void rope_qk(float* q, int n_head_q, float* k, int n_head_k, const int32_t* pos, int64_t n_tok,
             int head_dim, const RopeTable& table, ThreadPool& pool);

}  // namespace stride
