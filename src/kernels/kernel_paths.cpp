#include "kernels/kernel_paths.h"

#include <algorithm>
#include <vector>

namespace stride::kernels {

namespace {

KernelTable avx2_table() {
  namespace k = kernels_avx2;
  return {.matmul_f32 = k::matmul_f32, .matmul_f16 = k::matmul_f16, .matmul_bf16 = k::matmul_bf16,
          .bf16_terms = false, .quantize_act_rows = k::quantize_act_rows, .rmsnorm = k::rmsnorm,
          .silu_mul = k::silu_mul, .gelu_tanh_mul = k::gelu_tanh_mul, .softmax = k::softmax,
          .add_inplace = k::add_inplace, .softcap = k::softcap, .rotate_adjacent = k::rotate_adjacent,
          .rotate_neox = k::rotate_neox};
}

KernelTable avx512_table(bool bf16_dot) {
  namespace k = kernels_avx512;
  return {.matmul_f32 = k::matmul_f32, .matmul_f16 = k::matmul_f16,
          .matmul_bf16 = bf16_dot ? k::matmul_bf16_dot : k::matmul_bf16, .bf16_terms = bf16_dot,
          .quantize_act_rows = k::quantize_act_rows, .rmsnorm = k::rmsnorm, .silu_mul = k::silu_mul,
          .gelu_tanh_mul = k::gelu_tanh_mul, .softmax = k::softmax, .add_inplace = k::add_inplace,
          .softcap = k::softcap, .rotate_adjacent = k::rotate_adjacent, .rotate_neox = k::rotate_neox};
}

}  // namespace

const KernelTable& kernel_table(CpuPath p) {
  static const KernelTable avx2 = avx2_table();
  static const KernelTable avx512 = avx512_table(false);
  return p >= CpuPath::Avx512 ? avx512 : avx2;
}

const KernelTable* avx512_bf16_dot_table() {
  static const KernelTable table = avx512_table(true);
  static const bool runs = [] {
    const std::vector<CpuPath> paths = supported_cpu_paths();
    return cpu_features().avx512bf16 && std::find(paths.begin(), paths.end(), CpuPath::Avx512) != paths.end();
  }();
  return runs ? &table : nullptr;
}

}  // namespace stride::kernels
