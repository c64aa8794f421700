#pragma once
// The packed matmul's tiles, one set per CPU target (isa/packed_tiles.cpp,
// compiled per target), registered in the path's KernelTable (kernel_paths.h).
#include "core/cpu_features.h"
#include "core/worker_scratch.h"
#include "kernels/matmul_impl.h"
#include "kernels/packed_matrix.h"
#include "kernels/quant_act.h"

namespace stride::packed {

struct Problem {
  const PackedMatrix* w;
  const QuantizedActs* a;
  float* y;  // [n_tok, n_out]
};

// A worker's buffers for one token block's per-block activation factors,
// block-major ([n_blocks, kActStageToks]: the tokens of a block side by side),
// so a tile addresses every token's factor from one pointer. Kept in the
// worker's scratch, reused; grown (in the baseline-ISA translation unit
// packed_matmul.cpp) to n_blocks.
constexpr int64_t kActStageToks = 64;
struct ActStage {
  float* d;     // QuantizedActs::d
  float* s;     // QuantizedActs::s
  int32_t* hs;  // QuantizedActs::hs
  int32_t* qs;  // QuantizedActs::qs
  // [kActStageToks, n_blocks * 32]: token-major int8 activations + 128
  // (x ^ 0x80), the unsigned operand of vpdpbusd against weights staged as
  // signed integers (the 512-bit tiles; see kUnsignedActs).
  uint8_t* xu;
  // [n_blocks, kActStageToks, 32]: the int8 activations block-major, so the
  // 16 tokens of a block lie in 512 contiguous bytes (the AMX tiles' A
  // operand; rows n_in bytes apart would share a few L1 sets).
  int8_t* xt;
};
ActStage act_stage(WorkerScratch& ws, int64_t n_blocks);

// Decode (tiles of at most kStreamMaxToks tokens) streams every weight byte
// once from DRAM: its tile prefetches kStreamPrefetchAhead bytes ahead in the
// group's stream while a block computes.
constexpr int kStreamMaxToks = 3;
constexpr int kStreamPrefetchAhead = 6144;

// y of row groups [wr.r0, wr.r1) x tokens [wr.t0, wr.t1) of p, with the
// scratch of the worker running it (thread_pool.h).
using RunRangeFn = void (*)(const Problem& p, const detail::WorkRange& wr, WorkerScratch& ws);


// matmul_packed (kernels/matmul.h) through the tiles of run_range.
void matmul_packed_on(RunRangeFn run_range, const PackedMatrix& w, const float* x, float* y, int64_t n_tok,
                      ThreadPool& pool);

}  // namespace stride::packed
