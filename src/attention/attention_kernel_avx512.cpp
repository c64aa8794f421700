// The fused paged attention kernel on AVX-512 (32 registers: 4-wide quad
// tiles; 512-bit dot and value tiles, attention_tiles_wide.inc). Only the code after the
// pragma is compiled for AVX-512; the headers above are compiled for the
// baseline, and the code below has internal linkage but attention_paged_path.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "attention/attention_kernel_paths.h"
#include "attention/rope_shift.h"
#include "attention/work_partition.h"
#include "kernels/simd/exp.h"
#include "kernels/simd/loaders.h"
#include "kernels/simd/reduce.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")
// GCC 12 reports its own 512-bit intrinsics' undefined merge sources as
// maybe-uninitialized at -O3 (bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace stride::attn_avx512 {
namespace tiles {
constexpr int kQuadWidth = 4;
#define STRIDE_ATTN_WIDE 1
#include "attention/attention_tiles.inc"
#undef STRIDE_ATTN_WIDE
}  // namespace tiles
#include "attention/attention_kernel.inc"
}  // namespace stride::attn_avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
