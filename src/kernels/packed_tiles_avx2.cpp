// The packed matmul's tiles on the AVX2 path (maddubs into int16, then int32;
// staged weights for prefill, packed_tiles_staged.inc).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed_format.h"
#include "kernels/packed_tiles.h"

namespace stride::packed::avx2 {
#define STRIDE_PACKED_VNNI 0
#define STRIDE_PACKED_AMX 0
#include "kernels/packed_tiles.inc"
#undef STRIDE_PACKED_AMX
#undef STRIDE_PACKED_VNNI
}  // namespace stride::packed::avx2
