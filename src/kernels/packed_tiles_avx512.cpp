// The packed matmul's tiles on the AVX-512 path: VNNI with 32 vector
// registers, so a tile holds 8 tokens, and 512-bit tiles over two row groups
// where there are enough tokens (packed_tiles_wide.inc). Only the code after the pragma
// is compiled for AVX-512, and all of it has internal linkage but run_range:
// the headers above (and any inline function or template they define) are
// compiled for the AVX2 baseline, so no AVX-512 copy of them can be chosen
// by the linker for code that runs on an AVX2-only CPU.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed_format.h"
#include "kernels/packed_tiles.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")
// GCC 12's 512-bit intrinsics pass _mm512_undefined_* as the merge source of
// unmasked builtins, which -Wmaybe-uninitialized reports at -O3 (GCC bug
// 105593, fixed in GCC 13): not a defect of this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace stride::packed::avx512 {
#define STRIDE_PACKED_VNNI 1
#define STRIDE_PACKED_AMX 0
#include "kernels/packed_tiles.inc"
#undef STRIDE_PACKED_AMX
#undef STRIDE_PACKED_VNNI
}  // namespace stride::packed::avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
