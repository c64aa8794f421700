#include "kernels/amx_check.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/packed_matrix.h"

namespace stride::kernels {
namespace {

// Random blocks of type t with finite fp16 scales at the given offsets.
std::vector<uint8_t> random_blocks(DType t, int64_t n_in, int64_t n_out, const std::vector<int>& half_offsets,
                                   std::mt19937& rng) {
  const DTypeInfo* info = dtype_info(t);
  const int64_t n_blocks = n_in / info->block_elems * n_out;
  std::vector<uint8_t> bytes((size_t)(n_blocks * info->block_bytes));
  for (auto& b : bytes) b = (uint8_t)(rng() & 0xFF);
  std::uniform_real_distribution<float> ud(-0.05f, 0.05f);
  for (int64_t b = 0; b < n_blocks; ++b)
    for (int off : half_offsets) {
      const uint16_t h = fp32_to_fp16(ud(rng));
      std::memcpy(bytes.data() + b * info->block_bytes + off, &h, 2);
    }
  return bytes;
}

}  // namespace

Status check_tile_path(packed::RunRangeFn candidate, packed::RunRangeFn reference) {
  struct Case {
    DType type;
    std::vector<int> halves;  // offsets of the fp16 scales in a block
  };
  constexpr int64_t n_in = 512, n_out = 40, n_tok = 37;  // 2 tile pairs and an odd group; 2 tiles and a rest
  std::mt19937 rng(20261203);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)(n_in * n_tok));
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(1);
  const std::vector<Case> cases = {{DType::Q4_K, {0, 2}}, {DType::Q6_K, {208}}, {DType::Q8_0, {0}}};
  for (const Case& c : cases) {
    const std::vector<uint8_t> bytes = random_blocks(c.type, n_in, n_out, c.halves, rng);
    TensorView view;
    view.name = "check";
    view.type = c.type;
    view.n_dims = 2;
    view.ne = {n_in, n_out, 1, 1};
    view.data = bytes.data();
    view.nbytes = (int64_t)bytes.size();
    auto pm = pack_matrix(view);
    if (!pm.ok()) return pm.status();
    std::vector<float> want((size_t)(n_out * n_tok), 0.0f), got(want.size(), -1.0f);
    packed::matmul_packed_on(reference, pm.value(), x.data(), want.data(), n_tok, pool);
    packed::matmul_packed_on(candidate, pm.value(), x.data(), got.data(), n_tok, pool);
    if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0)
      return Internal(std::string("the tile path's ") + dtype_name(c.type) + " matmul differs from the reference path");
  }
  return Status::Ok();
}

Status check_float_tiles(const KernelTable& candidate, const KernelTable& reference) {
  constexpr int64_t n_in = 200, n_out = 40, n_tok = 37;  // slice and row tails; 2 tile pairs and a rest
  std::mt19937 rng(20261204);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)(n_in * n_tok)), abs_x(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = nd(rng);
    abs_x[i] = std::fabs(x[i]);
  }
  ThreadPool pool(1);
  for (const DType type : {DType::F32, DType::F16, DType::BF16}) {
    const size_t esz = type == DType::F32 ? 4 : 2;
    std::vector<uint8_t> bytes((size_t)(n_in * n_out) * esz), abs_bytes;
    for (size_t i = 0; i < bytes.size() / esz; ++i) {
      const float v = nd(rng);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const uint16_t h = type == DType::F16 ? fp32_to_fp16(v) : (uint16_t)(bits >> 16);
      if (type == DType::F32) std::memcpy(bytes.data() + 4 * i, &v, 4);
      else std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    abs_bytes = bytes;
    for (size_t i = 0; i < abs_bytes.size(); i += esz) abs_bytes[i + esz - 1] &= 0x7F;  // clear the sign
    TensorView view;
    view.name = "check";
    view.type = type;
    view.n_dims = 2;
    view.ne = {n_in, n_out, 1, 1};
    view.data = bytes.data();
    view.nbytes = (int64_t)bytes.size();
    TensorView abs_view = view;
    abs_view.data = abs_bytes.data();
    std::vector<float> want((size_t)(n_out * n_tok), 0.0f), got(want.size(), NAN), scale(want.size(), 0.0f);
    detail::matmul_float_on(reference, view, x.data(), want.data(), n_tok, pool);
    detail::matmul_float_on(reference, abs_view, abs_x.data(), scale.data(), n_tok, pool);
    detail::matmul_float_on(candidate, view, x.data(), got.data(), n_tok, pool);
    const double rel = (double)(n_in + 16) * std::ldexp(1.0, -22);
    for (size_t i = 0; i < want.size(); ++i)
      if (!(std::fabs((double)got[i] - want[i]) <= rel * scale[i] + 1e-30))
        return Internal(std::string("the float tiles' ") + dtype_name(type) + " matmul differs from the reference path");
  }
  return Status::Ok();
}

Status check_amx_path() {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  if (paths.empty() || paths.back() != CpuPath::Amx) return Unsupported("this machine does not run the AMX path");
  Status tiles = check_tile_path(kernel_table(CpuPath::Amx).packed_tiles, kernel_table(CpuPath::Avx512).packed_tiles);
  if (!tiles.ok()) return tiles;
  return check_float_tiles(kernel_table(CpuPath::Amx), kernel_table(CpuPath::Avx512));
}

}  // namespace stride::kernels
