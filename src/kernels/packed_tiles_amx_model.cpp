// The AMX path's tiles with the tile instructions run by their software model
// (tmul_model.h) instead of the tile unit: the same kernel code as
// packed_tiles_amx.cpp, so machines with AVX-512 but without AMX test it
// (tests/unit/kernels/test_packed_amx.cpp). Not a path the engine chooses.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed_format.h"
#include "kernels/packed_tiles.h"
#include "kernels/tmul_config.h"
#include "kernels/tmul_model.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as packed_tiles_avx512.cpp
#define TMUL_LOAD_CONFIG(cfg) tmul_model::load_config(*(cfg))
#define TMUL_RELEASE() tmul_model::release()
#define TMUL_ZERO(t) tmul_model::zero(t)
#define TMUL_LOAD(t, base, stride) tmul_model::load(t, base, stride)
#define TMUL_STORE(t, base, stride) tmul_model::store(t, base, stride)
#define TMUL_DOT_SU(c, a, b) tmul_model::dot_su(c, a, b)
#define TMUL_DOT_SS(c, a, b) tmul_model::dot_ss(c, a, b)
namespace stride::packed::amx_model {
#define STRIDE_PACKED_VNNI 1
#define STRIDE_PACKED_AMX 1
#include "kernels/packed_tiles.inc"
#undef STRIDE_PACKED_AMX
#undef STRIDE_PACKED_VNNI
}  // namespace stride::packed::amx_model
#pragma GCC diagnostic pop
#pragma GCC pop_options
