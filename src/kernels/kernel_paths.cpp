#include "kernels/kernel_paths.h"

#include <algorithm>
#include <vector>

#include "kernels/kernel_entries.h"

namespace stride::kernels {

namespace {

KernelTable avx2_table() {
  namespace k = isa::avx2;
  return {.matmul_f32 = k::matmul_f32, .matmul_f16 = k::matmul_f16, .matmul_bf16 = k::matmul_bf16,
          .packed_tiles = k::packed_run_range,
          .packed_stage_acts = k::packed_stage_acts, .bf16_terms = false, .quantize_act_rows = k::quantize_act_rows,
          .rmsnorm = k::rmsnorm,
          .silu_mul = k::silu_mul, .gelu_tanh_mul = k::gelu_tanh_mul, .softmax = k::softmax,
          .log_sum_exp = k::log_sum_exp,
          .add_inplace = k::add_inplace, .softcap = k::softcap, .rotate_adjacent = k::rotate_adjacent,
          .rotate_neox = k::rotate_neox};
}

KernelTable avx512_table(bool bf16_dot) {
  namespace k = isa::avx512;
  return {.matmul_f32 = k::matmul_f32, .matmul_f16 = k::matmul_f16,
          .matmul_bf16 = bf16_dot ? k::matmul_bf16_dot : k::matmul_bf16,
          .packed_tiles = k::packed_run_range,
          .packed_stage_acts = k::packed_stage_acts, .bf16_terms = bf16_dot,
          .quantize_act_rows = k::quantize_act_rows, .rmsnorm = k::rmsnorm, .silu_mul = k::silu_mul,
          .gelu_tanh_mul = k::gelu_tanh_mul, .softmax = k::softmax, .log_sum_exp = k::log_sum_exp,
          .add_inplace = k::add_inplace,
          .softcap = k::softcap, .rotate_adjacent = k::rotate_adjacent, .rotate_neox = k::rotate_neox};
}

// The AVX-512 table with prefill's int8 tiles on the tile unit (AMX-INT8).
template <auto Tiles, auto Stage>
KernelTable with_amx_int8_tiles() {
  KernelTable t = avx512_table(false);
  t.packed_tiles = Tiles;
  t.packed_stage_acts = Stage;
  return t;
}

// ... and its float tiles too (AMX-BF16).
template <auto Tiles, auto Stage, auto F32, auto F16, auto BF16, auto Prepare>
KernelTable with_amx_tiles() {
  KernelTable t = with_amx_int8_tiles<Tiles, Stage>();
  t.matmul_f32 = F32;
  t.matmul_f16 = F16;
  t.matmul_bf16 = BF16;
  t.bf16_terms = false;
  t.x_tiles = true;
  t.prepare_x_tiles = Prepare;
  t.row_align = 16;
  return t;
}

bool runs_avx512() {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  return std::find(paths.begin(), paths.end(), CpuPath::Avx512) != paths.end();
}

}  // namespace

const KernelTable& kernel_table(CpuPath p) {
  static const KernelTable avx2 = avx2_table();
  static const KernelTable avx512 = avx512_table(false);
  namespace x = isa::amx;
  static const KernelTable amx_int8 = with_amx_int8_tiles<&x::packed_run_range, &x::packed_stage_acts>();
  static const KernelTable amx =
      with_amx_tiles<&x::packed_run_range, &x::packed_stage_acts, &x::matmul_f32, &x::matmul_f16,
                     &x::matmul_bf16, &x::prepare_x_tiles>();
  switch (p) {
    case CpuPath::Amx: return cpu_features().amx_bf16 ? amx : amx_int8;
    case CpuPath::Avx512: return avx512;
    case CpuPath::Avx2: break;
  }
  return avx2;
}

const KernelTable* amx_model_float_table() {
  namespace m = isa::amx_model;
  static const KernelTable table =
      with_amx_tiles<&m::packed_run_range, &m::packed_stage_acts, &m::matmul_f32, &m::matmul_f16,
                     &m::matmul_bf16, &m::prepare_x_tiles>();
  static const bool runs = runs_avx512();
  return runs ? &table : nullptr;
}

const KernelTable* avx512_bf16_dot_table() {
  static const KernelTable table = avx512_table(true);
  static const bool runs = cpu_features().avx512bf16 && runs_avx512();
  return runs ? &table : nullptr;
}

}  // namespace stride::kernels
