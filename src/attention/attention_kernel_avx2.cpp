// The fused paged attention kernel on the AVX2 baseline (16 ymm registers: 2-wide quad tiles).
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


namespace stride::attn_avx2 {
namespace tiles {
constexpr int kQuadWidth = 2;
#include "attention/attention_tiles.inc"
}  // namespace tiles
#include "attention/attention_kernel.inc"
}  // namespace stride::attn_avx2

