#pragma once
// The packed matmul's tiles, one set per CPU target (isa/packed_tiles.cpp,
// compiled per target), registered in the path's KernelTable (kernel_paths.h).
#include "core/cpu_features.h"
#include "core/worker_scratch.h"
#include "kernels/matmul_impl.h"
#include "kernels/packed_matrix.h"
#include "kernels/quant_act.h"

namespace stride::packed {

struct StagedActs;

struct Problem {
  const PackedMatrix* w;
  const QuantizedActs* a;
  float* y;  // [n_tok, n_out]
  // The dispatch's activations staged once for every chunk and matrix
  // (StageActsFn), or null: each chunk stages its token blocks itself.
  const StagedActs* staged = nullptr;
};

// A worker's buffers for one token block's per-block activation factors,
// block-major ([n_blocks, kActStageToks]: the tokens of a block side by side),
// so a tile addresses every token's factor from one pointer. Kept in the
// worker's scratch, reused; grown (in the baseline-ISA translation unit
// packed_matmul.cpp) to n_blocks.
constexpr int64_t kActStageToks = 64;
// Bytes between two tokens' rows of ActStage::xu (act_row_stride, quant_act.h).
constexpr int64_t xu_row_bytes(int64_t n_blocks) { return act_row_stride(n_blocks * 32); }
struct ActStage {
  float* d;     // QuantizedActs::d
  float* s;     // QuantizedActs::s
  int32_t* hs;  // QuantizedActs::hs
  int32_t* qs;  // QuantizedActs::qs
  // [kActStageToks, xu_row_bytes(n_blocks)]: token-major int8 activations + 128
  // (x ^ 0x80), the unsigned operand of vpdpbusd against weights staged as
  // signed integers (the 512-bit tiles; see kUnsignedActs).
  uint8_t* xu;
  // [n_blocks, kActStageToks, 32]: the int8 activations block-major, so the
  // 16 tokens of a block lie in 512 contiguous bytes (the AMX tiles' A
  // operand; rows n_in bytes apart would share a few L1 sets).
  int8_t* xt;
  // [n_blocks / 2, kActStageToks]: int16 pairs (Σq of block 2i, of block
  // 2i + 1), the K-quant mins' integer sums (kIntSums tiles).
  int32_t* ps;
};
ActStage act_stage(WorkerScratch& ws, int64_t n_blocks);

// All tokens of a dispatch staged once, token block i (tokens [64 i, 64 i + 64))
// laid out as one ActStage, so that every chunk and every matrix of the
// dispatch reads the same copy instead of staging its own (packed_matmul.cpp
// owns the buffers, the path's StageActsFn fills them).
struct StagedActs {
  int64_t n_blocks = 0;
  float* d = nullptr;     // [n_tok_blocks, n_blocks, kActStageToks]
  float* s = nullptr;     // as d
  int32_t* hs = nullptr;  // as d
  int32_t* qs = nullptr;  // as d
  uint8_t* xu = nullptr;  // [n_tok, xu_row_bytes(n_blocks)]
  int8_t* xt = nullptr;   // [n_tok_blocks, n_blocks, kActStageToks, 32]
  int32_t* ps = nullptr;  // [n_tok_blocks, n_blocks / 2, kActStageToks]
  // The token block starting at token tb (a multiple of kActStageToks).
  ActStage at(int64_t tb) const {
    const int64_t f = tb / kActStageToks * n_blocks * kActStageToks;
    return {d + f, s + f, hs + f, qs + f, xu + tb * xu_row_bytes(n_blocks), xt + f * 32, ps + f / 2};
  }
};

// Stages tokens [t0, t1) of p.a into *p.staged for p.w's layout, as the
// path's RunRangeFn would stage them for itself (called from any thread, for
// disjoint token ranges, before the dispatch that reads them).
using StageActsFn = void (*)(const Problem& p, int64_t t0, int64_t t1);

// Decode (tiles of at most kStreamMaxToks tokens) streams every weight byte
// once from DRAM: its tile prefetches kStreamPrefetchAhead bytes ahead in the
// group's stream while a block computes.
constexpr int kStreamMaxToks = 3;
constexpr int kStreamPrefetchAhead = 6144;

// y of row groups [wr.r0, wr.r1) x tokens [wr.t0, wr.t1) of p, with the
// scratch of the worker running it (thread_pool.h).
using RunRangeFn = void (*)(const Problem& p, const detail::WorkRange& wr, WorkerScratch& ws);


// matmul_packed (kernels/matmul.h) through the tiles of run_range; with
// stage_acts (the same path's), the activations are staged once per call.
void matmul_packed_on(RunRangeFn run_range, const PackedMatrix& w, const float* x, float* y, int64_t n_tok,
                      ThreadPool& pool, StageActsFn stage_acts = nullptr);

}  // namespace stride::packed
