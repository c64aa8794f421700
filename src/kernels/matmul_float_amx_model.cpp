// The AMX path's float matmul with the tile instructions run by their
// software model (tmul_model.h): the same kernel code as
// matmul_float_amx.cpp, so machines with AVX-512 but without AMX test it
// (tests/unit/kernels/test_matmul_float_paths.cpp). Not a path the engine
// chooses.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_paths.h"
#include "kernels/matmul_float_rows.h"
#include "kernels/tmul_config.h"
#include "kernels/tmul_model.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as matmul_float_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#define TMUL_LOAD_CONFIG(cfg) tmul_model::load_config(*(cfg))
#define TMUL_RELEASE() tmul_model::release()
#define TMUL_ZERO(t) tmul_model::zero(t)
#define TMUL_LOAD(t, base, stride) tmul_model::load(t, base, stride)
#define TMUL_STORE(t, base, stride) tmul_model::store(t, base, stride)
#define TMUL_DOT_BF16(c, a, b) tmul_model::dot_bf16(c, a, b)
namespace stride::kernels_amx_model {
#include "kernels/matmul_float_amx.inc"
}  // namespace stride::kernels_amx_model
#pragma GCC diagnostic pop
#pragma GCC pop_options
