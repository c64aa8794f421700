#pragma once
// The kernels that exist once per CPU path, as one table of function pointers
// per path (ggml's CPU variants, one table chosen once): the float matmul's
// tiles, the packed quantized matmul's tiles, activation quantization and
// the element-wise ops. Each target's entries (kernel_entries.h) live in
// namespace stride::isa::<target>; all but the AVX2 baseline's are kernel
// variants in kernels/isa/, compiled for their target after their headers
// (stride_isa_variant in CMakeLists.txt), which scripts/check_isa_isolation
// allows; the rest of the binary stays AVX2.
// The attention kernel reads KV pages, a layer above this one: its variants
// are registered the same way, in attention/attention_kernel_paths.h.
// The AMX path's table is the AVX-512 one with float tiles on the tile unit
// where the CPU has AMX-BF16 (bf16 dot products of exact weight terms and
// activation terms, f32 sums: f32 rounding from the AVX2 result).
//
// Every AVX-512 entry gives the AVX2 entry's result bit for bit (same
// per-lane operations and the same summation order per output). The
// optional vdpbf16ps table below does not: it splits activations into bf16
// terms (FloatMatmul::x_bf16) and sums in another order (f32 rounding).
#include <cstdint>

#include "core/cpu_features.h"
#include "core/tensor.h"
#include "core/worker_scratch.h"
#include "kernels/matmul_impl.h"
#include "kernels/packed_tiles.h"
#include "kernels/quant_act.h"

namespace stride {
struct PackedMatrix;
}

namespace stride::kernels {

// One float-weight matmul (see matmul.h): y = x · wᵀ.
struct FloatMatmul {
  const TensorView* w;  // [n_out, n_in] F32, F16 or BF16; null when packed is set
  const float* x;       // [n_tok, n_in]
  // [n_tok, kBf16Terms, n_in] x as a sum of bf16 terms, largest first (each the
  // bf16 nearest to what the ones before leave: x - hi - mid - lo is below
  // 2^-26 |x|, finer than f32 rounding); set only when the table's bf16_terms.
  const uint16_t* x_bf16;
  float* y;  // [n_tok, n_out]
  int64_t n_in, n_out;
  // [ceil(n_tok / 16), kBf16Terms, ceil(n_in / 32), 16, 16, 2] the same terms as
  // AMX B tiles (isa/matmul_float_amx.cpp); set only when the table's x_tiles.
  const uint16_t* x_tiles = nullptr;
  // The same weights repacked (packed_matrix.h: [n_groups, n_in / 8, 8 rows,
  // 8]); the tiles then read one sequential stream per 8 rows instead of 8.
  // Set instead of w, with row ranges starting at a multiple of 8; the
  // result is the row-major one bit for bit.
  const PackedMatrix* packed = nullptr;
};
inline constexpr int kBf16Terms = 3;
// ws: the scratch of the worker running the range (thread_pool.h).
using FloatRangeFn = void (*)(const FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);

struct KernelTable {
  FloatRangeFn matmul_f32, matmul_f16, matmul_bf16;
  packed::RunRangeFn packed_tiles;  // the quantized matmul's tiles (packed_tiles.h)
  packed::StageActsFn packed_stage_acts;  // their activations, staged once per dispatch
  bool bf16_terms;  // matmul_bf16 reads FloatMatmul::x_bf16
  // quantize_acts_rows (quant_act.h) of rows [t_begin, t_end); out already sized.
  void (*quantize_act_rows)(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out);
  // The ops of ops.h, same contracts.
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*gelu_tanh_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*softmax)(float* x, int64_t n);
  double (*log_sum_exp)(const float* x, int64_t n);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  void (*softcap)(float* x, int64_t n, float cap);
  // One head's rotation (ops_rope.cpp). Adjacent pairs: cs = [c0 c0 c1 c1 ..],
  // sn = [-s0 s0 -s1 s1 ..] over rot_dim; NeoX pairs (i, i + half): cs, sn [half].
  void (*rotate_adjacent)(float* v, const float* cs, const float* sn, int rot_dim);
  void (*rotate_neox)(float* v, const float* cs, const float* sn, int half);
  // The AMX tiles: every float matmul reads FloatMatmul::x_tiles, which
  // prepare_x_tiles writes (token tiles [tile_begin, tile_end) of x), and
  // takes row ranges aligned to row_align.
  bool x_tiles = false;
  void (*prepare_x_tiles)(const float* x, int64_t n_tok, int64_t n_in, uint16_t* out, int64_t tile_begin,
                          int64_t tile_end) = nullptr;
  int64_t row_align = 4;
};

// The table of path p (which the CPU must run).
const KernelTable& kernel_table(CpuPath p);
// The table of the active path (cpu_features.h).
inline const KernelTable& active_kernels() { return kernel_table(active_cpu_path()); }

// The AVX-512 table with vdpbf16ps tiles for bf16 weights, or null where the
// CPU lacks AVX-512 or AVX512-BF16. Not the default: at the f32 accuracy the
// matmul keeps, the activations take three bf16 terms, three vdpbf16ps per
// 32 products against two FMAs for widened weights, and on Zen 4 the
// widened tiles prefill about 1.3x faster (docs/performance.md). Kept,
// tested and benchmarked for CPUs where that balance differs.
const KernelTable* avx512_bf16_dot_table();

// The AMX path's table with its tiles (float and packed) run by the software
// model of the tile unit (tmul_model.h), or null where the CPU lacks AVX-512:
// for tests on machines without AMX.
const KernelTable* amx_model_float_table();

// A worker's buffer for the AMX float tiles' staged weights, at least n bf16
// (grown in the baseline-ISA translation unit matmul_float.cpp).
uint16_t* amx_weight_stage(WorkerScratch& ws, int64_t n);

}  // namespace stride::kernels

namespace stride::detail {
// matmul_float (matmul_impl.h) on the tiles of table k: for tests and benches.
void matmul_float_on(const kernels::KernelTable& k, const TensorView& w, const float* x, float* y,
                     int64_t n_tok, ThreadPool& pool);
// The same on repacked float weights (pack_matrix of an F32, F16 or BF16
// tensor); the result equals matmul_float_on's on the original bit for bit.
// The vdpbf16ps table reads row-major weights only: with it, the AVX-512
// tiles run.
void matmul_float_packed_on(const kernels::KernelTable& k, const PackedMatrix& w, const float* x, float* y,
                            int64_t n_tok, ThreadPool& pool);
}  // namespace stride::detail

