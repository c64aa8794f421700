// The packed matmul's tiles on the AMX path: the AVX-512 path's tiles, with
// prefill's 16-token tiles on the int8 tile unit (packed_tiles_amx.inc). Only
// the code after the pragma is compiled for AVX-512 and AMX, and all of it has
// internal linkage but run_range (see packed_tiles_avx512.cpp). Runs only
// where cpu_features() found AMX and Linux granted the process tile data.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed_format.h"
#include "kernels/packed_tiles.h"
#include "kernels/tmul_config.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,amx-tile,amx-int8")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as packed_tiles_avx512.cpp
#include "kernels/tmul_hw.h"
#define TMUL_DOT_SU(c, a, b) _tile_dpbsud(c, a, b)
#define TMUL_DOT_SS(c, a, b) _tile_dpbssd(c, a, b)
namespace stride::packed::amx {
#define STRIDE_PACKED_VNNI 1
#define STRIDE_PACKED_AMX 1
#include "kernels/packed_tiles.inc"
#undef STRIDE_PACKED_AMX
#undef STRIDE_PACKED_VNNI
}  // namespace stride::packed::amx
#pragma GCC diagnostic pop
#pragma GCC pop_options
