#pragma once
// Element-wise and row-wise kernels. Each fast kernel has a *_ref scalar twin
// that the tests compare it against.
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/rope_table.h"

namespace stride {

// y[r] = x[r] / rms(x[r]) * w, rows of length n. y may alias x. w may be null (no scale).
void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);
void rmsnorm_ref(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);

// Rotary embedding in place.
//   x: [n_tok, n_heads, head_dim]; pos: [n_tok]
//   rotates the first table.rot_dim() dims of each head: pair i by angle
//   pos * table.inv_freq[i] (formed in double), scaled by table.magnitude.
void rope(float* x, const int32_t* pos, int64_t n_tok, int n_heads, int head_dim, const RopeTable& table);
// The caller's buffers for rope_tokens, reused across calls.
struct RopeScratch {
  std::vector<float> cs, sn;  // [rot_dim] a token's cos/sin, laid out per pairing
};
// rope over tokens [t0, t1) of several tensors sharing pos and the table
// (queries and keys): each token's cos/sin are computed once for all of them.
//   xs[j]: [n_tok, n_heads[j], head_dim]
void rope_tokens(float* const* xs, const int* n_heads, int n_x, const int32_t* pos, int64_t t0,
                 int64_t t1, int head_dim, const RopeTable& table, RopeScratch& scratch);
void rope_ref(float* x, const int32_t* pos, int64_t n_tok, int n_heads, int head_dim, const RopeTable& table);

// Gated activations: out[i] = act(gate[i]) * up[i]. out may alias gate.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n);
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);
void gelu_tanh_mul_ref(const float* gate, const float* up, float* out, int64_t n);

// In-place softmax over n values.
void softmax(float* x, int64_t n);
void softmax_ref(float* x, int64_t n);

// log(sum_i exp(x[i])) over n NaN-free values, in f64: the normalizer of a
// log-softmax. -inf when every value is -inf (or n <= 0).
double log_sum_exp(const float* x, int64_t n);
double log_sum_exp_ref(const float* x, int64_t n);

// out[i, :] = dequantized row ids[i] of table ([n_vocab rows, n_embd cols]) * scale.
// Returns false when an id is out of range (nothing is read past the table).
bool embed_rows(const TensorView& table, const int32_t* ids, int64_t n, float scale, float* out);
bool embed_rows_ref(const TensorView& table, const int32_t* ids, int64_t n, float scale, float* out);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);
// x[i] = cap * tanh(x[i] / cap)
void softcap(float* x, int64_t n, float cap);

}  // namespace stride
