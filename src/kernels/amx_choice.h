#pragma once
// Which quantized weights the AMX path's prefill runs on the tile unit: a
// pure function of the weight type, so the choice is tested by a table.
#include "core/dtype.h"

namespace stride::kernels {

// Whether the AMX path multiplies weights of type t on the int8 tile unit
// where a thread's tokens fill 16-token tiles; the other types run the
// AVX-512 path's 512-bit tiles there too.
//
// Every block of 32 weights has its own per-row scales, so each block's
// [16 tokens, 16 rows] sums leave the tile unit for the AVX-512 epilogue.
// Types with one scale per block take one tile dot per block. Types with a
// scale per 16 weights (Q6_K, Q2_K, Q3_K) take two dots of 16 bytes, two
// tile stores and an integer scaling of both halves per token, and ran
// slower than the 512-bit tiles. Measured 2026-12-06 on a 2-vCPU Xeon
// (Emerald Rapids class, shared and loaded), bench_matmul tok512/t1/packed,
// CPU ms AMX vs AVX-512: Q4_K 2048x8192 28 vs 36, Q8_0 2048x8192 28 vs 36,
// IQ4_XS 2048x8192 23 vs 34, Q5_K 2048x640 2.6 vs 3.0; Q6_K 8192x2048 52 vs
// 47, Q6_K 2048x640 4.0 vs 3.6, Q2_K 2048x8192 67 vs 49, Q3_K 2048x8192 47
// vs 43.
constexpr bool amx_int8_tiles_for(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q4_K: case DType::Q5_K: case DType::IQ4_NL: case DType::IQ4_XS: case DType::MXFP4:
      return true;
    default:
      return false;  // Q6_K, Q2_K, Q3_K; and types the packed matmul does not take
  }
}

}  // namespace stride::kernels
