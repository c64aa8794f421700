#pragma once
// The packed matmul's tiles, one set per CPU path (packed_tiles.inc compiled
// by packed_tiles_avx2.cpp and packed_tiles_avx512.cpp), chosen at run time.
#include "core/cpu_features.h"
#include "kernels/matmul_impl.h"
#include "kernels/packed_matrix.h"
#include "kernels/quant_act.h"

namespace stride::packed {

struct Problem {
  const PackedMatrix* w;
  const QuantizedActs* a;
  float* y;  // [n_tok, n_out]
};

// y of row groups [wr.r0, wr.r1) x tokens [wr.t0, wr.t1) of p.
using RunRangeFn = void (*)(const Problem& p, const detail::WorkRange& wr);

namespace avx2 {
void run_range(const Problem& p, const detail::WorkRange& wr);
}
namespace avx512 {
void run_range(const Problem& p, const detail::WorkRange& wr);
}

inline RunRangeFn run_range_for(CpuPath path) {
  return path == CpuPath::Avx512 ? &avx512::run_range : &avx2::run_range;
}

}  // namespace stride::packed
