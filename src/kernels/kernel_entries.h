#pragma once
// The entry points of each CPU kernel variant, one namespace per target
// (stride::isa::<target>, as stride_isa_variant in CMakeLists.txt compiles
// them), which kernel_paths.cpp registers in the target's KernelTable. See
// kernel_paths.h for their contracts. The avx2 entries are ordinary files at
// the build's baseline; the others are sources in kernels/isa/.
#include <cstdint>

#include "kernels/kernel_paths.h"

namespace stride::isa::avx2 {
void matmul_f32(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_f16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_bf16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);  // weights widened to f32
void packed_run_range(const packed::Problem& p, const detail::WorkRange& wr, WorkerScratch& ws);
void packed_stage_acts(const packed::Problem& p, int64_t t0, int64_t t1);
void quantize_act_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out);
void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);
void softmax(float* x, int64_t n);
double log_sum_exp(const float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);
void softcap(float* x, int64_t n, float cap);
void rotate_adjacent(float* v, const float* cs, const float* sn, int rot_dim);
void rotate_neox(float* v, const float* cs, const float* sn, int half);
}  // namespace stride::isa::avx2

// The same on AVX-512, bit for bit, and vdpbf16ps on FloatMatmul::x_bf16.
namespace stride::isa::avx512 {
void matmul_f32(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_f16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_bf16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_bf16_dot(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void packed_run_range(const packed::Problem& p, const detail::WorkRange& wr, WorkerScratch& ws);
void packed_stage_acts(const packed::Problem& p, int64_t t0, int64_t t1);
void quantize_act_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out);
void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);
void softmax(float* x, int64_t n);
double log_sum_exp(const float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);
void softcap(float* x, int64_t n, float cap);
void rotate_adjacent(float* v, const float* cs, const float* sn, int rot_dim);
void rotate_neox(float* v, const float* cs, const float* sn, int half);
}  // namespace stride::isa::avx512

// The tile unit's matmuls (the rest of the AMX path is the AVX-512 one), and
// the same code on the tile unit's software model.
namespace stride::isa::amx {
void matmul_f32(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_f16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_bf16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void prepare_x_tiles(const float* x, int64_t n_tok, int64_t n_in, uint16_t* out, int64_t tile_begin,
                     int64_t tile_end);
void packed_run_range(const packed::Problem& p, const detail::WorkRange& wr, WorkerScratch& ws);
void packed_stage_acts(const packed::Problem& p, int64_t t0, int64_t t1);
}  // namespace stride::isa::amx
namespace stride::isa::amx_model {
void matmul_f32(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_f16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void matmul_bf16(const kernels::FloatMatmul& p, const detail::WorkRange& wr, WorkerScratch& ws);
void prepare_x_tiles(const float* x, int64_t n_tok, int64_t n_in, uint16_t* out, int64_t tile_begin,
                     int64_t tile_end);
void packed_run_range(const packed::Problem& p, const detail::WorkRange& wr, WorkerScratch& ws);
void packed_stage_acts(const packed::Problem& p, int64_t t0, int64_t t1);
}  // namespace stride::isa::amx_model
