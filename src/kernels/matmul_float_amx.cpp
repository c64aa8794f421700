// The float matmul's tiles on the AMX path: bf16 tile dot products
// (matmul_float_amx.inc). Only the code after the pragma is compiled for
// AVX-512 and AMX, in namespace kernels_amx (see packed_tiles_avx512.cpp for
// why the headers come first). Chosen where the CPU has AMX-BF16 and Linux
// granted the process tile data, after the start-up check (amx_check.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_paths.h"
#include "kernels/matmul_float_rows.h"
#include "kernels/tmul_config.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,amx-tile,amx-bf16")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as matmul_float_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/tmul_hw.h"
#define TMUL_DOT_BF16(c, a, b) _tile_dpbf16ps(c, a, b)
namespace stride::kernels_amx {
#include "kernels/matmul_float_amx.inc"
}  // namespace stride::kernels_amx
#pragma GCC diagnostic pop
#pragma GCC pop_options
