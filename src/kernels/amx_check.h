#pragma once
// The AMX path's start-up check: the tile unit is new hardware with a
// history of faults in other engines, so before the first request the
// packed matmul runs a few small problems on both the candidate tiles and
// the AVX-512 path and requires identical bytes (the paths are bit-identical
// by construction, kernels/isa/packed_tiles_amx.h).
#include "core/status.h"
#include "kernels/kernel_paths.h"
#include "kernels/packed_tiles.h"

namespace stride::kernels {

// Compares candidate with reference on Q4_K, Q6_K and Q8_0 problems (the
// unsigned, split-scale and signed tile dots). Ok when every byte agrees.
Status check_tile_path(packed::RunRangeFn candidate, packed::RunRangeFn reference);

// Compares candidate's float tiles (f32, f16, bf16 weights) with
// reference's. The AMX float tiles sum bf16 products in another order, so
// an output may differ by f32 rounding: Ok when each is within
// (n_in + 16) * 2^-22 of Σ|w||x| of the reference's.
Status check_float_tiles(const KernelTable& candidate, const KernelTable& reference);

// Both checks for the AMX path against the AVX-512 one; main() calls it when
// the AMX path was chosen, and falls back to AVX-512 when it fails.
Status check_amx_path();

}  // namespace stride::kernels
