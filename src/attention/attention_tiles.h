#pragma once
// The inner loops of the paged attention kernel (internal to src/attention),
// written once for every KV storage type through a row loader
// (kernels/simd/loaders.h): f32 rows, f16 rows widened in registers, int8
// rows with a per-token scale. A tile of R query rows shares every load of a
// key or value row; R is 4, 2 or 1.
//   scores: s_r[t] = q_r . k[t]            (times ks[t] for int8 keys)
//   values: o_r = o_r * alpha_r + sum_t p_r[t] * v[t]
//           (for int8 values the caller folds vs[t] into p_r[t])
// Scalar references of each are in attention_tiles_ref.h.
//
// Every (row, key) score is summed in one order whatever tile computes it:
// one 8-wide FMA chain over the first d & ~7 elements, the hsum4 tree, then
// the scalar tail, then the scale. Every output element is o * alpha followed
// by one FMA per key in key order. The scalar tails use explicit fma: a
// product and a sum would be contracted or not depending on the loader
// inlined. So a row's result depends neither on how many rows shared its
// tile nor on how many keys its page held: otherwise logits would depend on
// how many tokens shared a prefill call.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/simd/exp.h"
#include "kernels/simd/loaders.h"
#include "kernels/simd/reduce.h"

namespace stride::tiles {

// Keys per pass of a dot tile and 8-column vectors per pass of a value tile:
// R x K (or R x V) accumulators plus the shared rows must fit the register
// file (16 ymm registers under AVX2, 32 under AVX-512VL).
#ifdef __AVX512VL__
inline constexpr int kQuadWidth = 4;
#else
inline constexpr int kQuadWidth = 2;
#endif
#include "attention/attention_tiles.inc"

}  // namespace stride::tiles
