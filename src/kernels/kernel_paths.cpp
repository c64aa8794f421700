#include "kernels/kernel_paths.h"

namespace stride::kernels {

namespace {

KernelTable avx2_table() {
  namespace k = kernels_avx2;
  return {k::matmul_f32, k::matmul_f16,  k::matmul_bf16, false,         k::quantize_act_rows,
          k::rmsnorm,    k::silu_mul,    k::gelu_tanh_mul, k::softmax,  k::add_inplace,
          k::softcap,    k::rotate_adjacent, k::rotate_neox};
}

KernelTable avx512_table(bool bf16_dot) {
  namespace k = kernels_avx512;
  return {k::matmul_f32, k::matmul_f16, bf16_dot ? k::matmul_bf16_dot : k::matmul_bf16, bf16_dot,
          k::quantize_act_rows, k::rmsnorm, k::silu_mul, k::gelu_tanh_mul, k::softmax, k::add_inplace,
          k::softcap, k::rotate_adjacent, k::rotate_neox};
}

}  // namespace

const KernelTable& kernel_table(CpuPath p) {
  static const KernelTable avx2 = avx2_table();
  static const KernelTable avx512 = avx512_table(false);
  return p == CpuPath::Avx512 ? avx512 : avx2;
}

const KernelTable* avx512_bf16_dot_table() {
  const CpuFeatures& f = cpu_features();
  static const KernelTable t = avx512_table(true);
  bool avx512 = false;
  for (const CpuPath p : supported_cpu_paths()) avx512 = avx512 || p == CpuPath::Avx512;
  return avx512 && f.avx512bf16 ? &t : nullptr;
}

}  // namespace stride::kernels
