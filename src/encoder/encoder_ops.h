#pragma once
// The operations a BERT encoder adds to the decoder's kernels: LayerNorm with
// bias, exact (erf) GELU, and bidirectional attention over one whole
// sequence. Each fast op has a scalar *_ref twin (double accumulation) that
// the tests compare it against.
#include <cstdint>

#include "core/thread_pool.h"

namespace stride {

// y[r] = (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * w + b, rows of n. y may alias x.
void layernorm(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t n, float eps,
               ThreadPool& pool);
void layernorm_ref(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t n, float eps);

// x[i] = x[i] / 2 * (1 + erf(x[i] / sqrt(2))), in place.
void gelu_erf(float* x, int64_t n, ThreadPool& pool);
void gelu_erf_ref(float* x, int64_t n);

// One sequence, every query attends to every key (no mask):
//   q, k, v: [n, n_head, head_dim] with rows `stride` floats apart
//   out:     [n, n_head, head_dim] with the same row stride
void bidirectional_attention(const float* q, const float* k, const float* v, float* out, int n, int n_head,
                             int head_dim, int64_t stride, float scale, ThreadPool& pool);
void bidirectional_attention_ref(const float* q, const float* k, const float* v, float* out, int n, int n_head,
                                 int head_dim, int64_t stride, float scale);

}  // namespace stride
