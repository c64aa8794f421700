#pragma once
// A software model of the AMX tile registers and the int8 tile instructions
// (ldtilecfg, tilezero, tileloadd, tilestored, tdpbsud, tdpbssd, tdpbf16ps), written from
// the instructions' definitions. The AMX kernels are written once against
// macros that expand to the instructions or to these functions, so machines
// without AMX run the same kernel code, tile for tile, in the tests.
//
// Like the hardware, which raises #UD, the model stops the process (abort) on
// a use it does not define: an unconfigured tile, or operand shapes that do
// not fit (A's bytes per row / 4 != B's rows, B's and C's row widths
// differing, A's and C's row counts differing). State is per thread, as tile
// registers are.
#include <cstdint>

#include "kernels/tmul_config.h"

namespace stride::tmul_model {

// ldtilecfg: shapes every tile per cfg (palette 1) and zeroes the tiles.
void load_config(const tmul::TileConfig& cfg);
// tilerelease: back to the unconfigured state.
void release();
void zero(int tile);
// tileloadd: rows[tile] rows of colsb[tile] bytes, row r at base + r * stride.
void load(int tile, const void* base, int64_t stride);
// tilestored: the reverse.
void store(int tile, void* base, int64_t stride);
// C[m][n] += Σ_k Σ_i A.byte[m][4k + i] * B.byte[k][4n + i] in int32, A's bytes
// signed, B's unsigned (tdpbsud) or signed (tdpbssd).
void dot_su(int c, int a, int b);
void dot_ss(int c, int a, int b);
// tdpbf16ps: C.fp32[m][n] += A.bf16[m][2k] * B.bf16[k][2n], then
// += A.bf16[m][2k + 1] * B.bf16[k][2n + 1], for k in order, each step one
// f32 rounding (nearest even), bf16 denormals read as zero and f32 denormal
// results flushed to zero, as the instruction's definition states.
void dot_bf16(int c, int a, int b);
// Tile dot products run by the model so far, over all threads (tests check
// that a kernel took the tile path at all).
uint64_t dots_run();

}  // namespace stride::tmul_model
