// The packed matmul's tiles, a kernel variant compiled once per CPU target
// (stride_isa_variant in CMakeLists.txt): avx2 (maddubs, the staged prefill
// tiles of isa/packed_tiles_staged.h), avx512 (VNNI with 32 vector registers,
// so a tile holds 8 tokens, and 512-bit tiles over two row groups where there
// are enough tokens: isa/packed_tiles_wide.h), amx (prefill's 16-token tiles
// on the int8 tile unit: isa/packed_tiles_amx.h) and amx_model (the same on
// the tile unit's software model). Everything but packed_run_range has
// internal linkage. Integer sums are exact on every path, so they produce
// identical results.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/amx_choice.h"
#include "kernels/kernel_entries.h"
#include "kernels/packed_format.h"
#include "kernels/packed_tiles.h"
#include "kernels/tmul_config.h"
#include "kernels/tmul_model.h"

#include "kernels/isa/begin.h"
#include "kernels/isa/packed_tiles_core.h"
#if STRIDE_ISA_LEVEL == 0
#include "kernels/isa/packed_tiles_staged.h"
#else
#include "kernels/isa/packed_tiles_wide.h"
#endif
#if STRIDE_ISA_LEVEL >= 2
#include "kernels/isa/packed_tiles_amx.h"
#endif

namespace stride::isa::STRIDE_ISA_NS {
namespace {

#if STRIDE_ISA_LEVEL >= 1
// Tokens [tb, te) (at most kTokenBlock) of groups g and g + 1, a chunk of
// staged blocks at a time; the token tiles' sums wait in acc between chunks.
// kAmx: 16-token tiles on the tile unit (amx_int8_tiles_for).
template <const Layout& L, bool kAmx>
void run_group_pair_staged(const Problem& p, int64_t g, int64_t tb, int64_t te, const packed::ActStage& as) {
  alignas(64) StagedBlock st[kStageBlocks];
  alignas(64) float acc[kTokenBlock * 2 * kPackRows];  // [te - tb, 16]
  const int64_t n_blocks = p.w->n_in / 32;
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kStageBlocks) {
    const int nb = (int)std::min<int64_t>(kStageBlocks, n_blocks - b0);
    stage_blocks<L>(*p.w, g, b0, nb, st);
    const bool first = b0 == 0, last = b0 + nb == n_blocks;
    // The pair's next chunk, or after its last the next pair's first.
    ChunkPrefetch<L, kStageBlocks> next(*p.w, last ? g + 2 : g, last ? 0 : b0 + nb, 2, (te - tb) / kTileToks);
    int64_t t = tb;
#if STRIDE_ISA_LEVEL >= 2
    if constexpr (kAmx) {
      const int amx_tiles = (int)((te - tb) / kAmxToks);
      if (amx_tiles > 0) tiles_amx<L>(p, g, tb, amx_tiles, st, b0, nb, as, acc, first, last);
      t += kAmxToks * amx_tiles;
    }
#endif
    for (; t + kTileToks <= te; t += kTileToks) {
      next.step();
      tile_wide<L, kTileToks>(p, g, t, st, b0, nb, as, t - tb, acc + (t - tb) * 16, first, last);
    }
    next.rest();
    float* rest = acc + (t - tb) * 16;
    switch (te - t) {
      case 7: tile_wide<L, 7>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 6: tile_wide<L, 6>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 5: tile_wide<L, 5>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 4: tile_wide<L, 4>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 3: tile_wide<L, 3>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 2: tile_wide<L, 2>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 1: tile_wide<L, 1>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      default: break;
    }
  }
}
#endif

// Tokens [tb, te) of group g.
template <const Layout& L>
void run_group(const Problem& p, int64_t g, int64_t tb, int64_t te) {
  int64_t t = tb;
  for (; t + kTileToks <= te; t += kTileToks) tile<L, kTileToks>(p, g, t);
  switch (te - t) {
#if STRIDE_ISA_LEVEL >= 1
    case 7: tile<L, 7>(p, g, t); break;
    case 6: tile<L, 6>(p, g, t); break;
    case 5: tile<L, 5>(p, g, t); break;
    case 4: tile<L, 4>(p, g, t); break;
#endif
    case 3: tile<L, 3>(p, g, t); break;
    case 2: tile<L, 2>(p, g, t); break;
    case 1: tile<L, 1>(p, g, t); break;
    default: break;
  }
}

// The factors (and int8 rows) of token block [tb, te) for layout L: the
// dispatch's staged copy where it has one (a block it staged whole: tb on a
// multiple of kActStageToks), else staged into the worker's buffers.
template <const Layout& L, bool kAmx>
packed::ActStage block_acts(const Problem& p, WorkerScratch& ws, int64_t n_blocks, int64_t tb, int64_t te) {
  if (p.staged && tb % packed::kActStageToks == 0) return p.staged->at(tb);
  const packed::ActStage as = packed::act_stage(ws, n_blocks);
  stage_acts<L, kAmx>(*p.a, n_blocks, tb, te, as);
  return as;
}

// Groups [g0, g1) x tokens [t0, t1) of weights of type T: token blocks
// outermost so their int8 activations stay cached while the groups stream
// past; each group's weights stay in L1 across the token tiles of a block.
template <DType T, const Layout& L>
void run_range_of(const Problem& p, const detail::WorkRange& wr, WorkerScratch& ws) {
  constexpr bool kAmx = STRIDE_ISA_LEVEL >= 2 && kernels::amx_int8_tiles_for(T);
#if STRIDE_ISA_LEVEL >= 2
  // Tile shapes are per thread, and only token blocks of 16+ use tiles.
  std::optional<TileScope> tiles;
  if (kAmx && wr.t1 - wr.t0 >= kAmxToks) tiles.emplace();
#endif
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    int64_t g = wr.r0;
#if STRIDE_ISA_LEVEL >= 1
    if (te - tb >= kVnniMinToks && g + 1 < wr.r1) {
      const packed::ActStage as = block_acts<L, kAmx>(p, ws, p.w->n_in / 32, tb, te);
      for (; g + 1 < wr.r1; g += 2) run_group_pair_staged<L, kAmx>(p, g, tb, te, as);
    }
#else
    if (kStaged<L> && te - tb >= kStageMinToks) {
      const packed::ActStage as = block_acts<L, kAmx>(p, ws, p.w->n_in / 32, tb, te);
      for (; g < wr.r1; ++g) run_group_staged<L>(p, g, tb, te, as);
    }
#endif
    for (; g < wr.r1; ++g) run_group<L>(p, g, tb, te);
  }
}

// Tokens [t0, t1) staged into *p.staged as block_acts stages a whole token
// block, a token block's share at a time.
template <DType T, const Layout& L>
void stage_range_of(const Problem& p, int64_t t0, int64_t t1) {
  constexpr bool kAmx = STRIDE_ISA_LEVEL >= 2 && kernels::amx_int8_tiles_for(T);
#if STRIDE_ISA_LEVEL == 0
  if constexpr (!kStaged<L>) return;
#endif
  constexpr int64_t S = packed::kActStageToks;
  for (int64_t t = t0; t < t1;) {
    const int64_t tb = t / S * S, te = std::min(t1, tb + S);
    stage_acts<L, kAmx>(*p.a, p.staged->n_blocks, t, te, p.staged->at(tb), t - tb);
    t = te;
  }
}

// F<T, layout of T>(args...) for p.w's type T.
template <template <DType, const Layout&> class F, typename... Args>
void for_type(const Problem& p, Args&&... args) {
  switch (p.w->type) {
    case DType::Q4_0: return F<DType::Q4_0, packed::kQ4_0>::run(p, args...);
    case DType::Q4_1: return F<DType::Q4_1, packed::kQ4_1>::run(p, args...);
    case DType::Q5_0: return F<DType::Q5_0, packed::kQ5_0>::run(p, args...);
    case DType::Q5_1: return F<DType::Q5_1, packed::kQ5_1>::run(p, args...);
    case DType::Q8_0: return F<DType::Q8_0, packed::kQ8_0>::run(p, args...);
    case DType::Q4_K: return F<DType::Q4_K, packed::kQ4_K>::run(p, args...);
    case DType::Q5_K: return F<DType::Q5_K, packed::kQ5_K>::run(p, args...);
    case DType::Q6_K: return F<DType::Q6_K, packed::kQ6_K>::run(p, args...);
    case DType::Q2_K: return F<DType::Q2_K, packed::kQ2_K>::run(p, args...);
    case DType::Q3_K: return F<DType::Q3_K, packed::kQ3_K>::run(p, args...);
    case DType::IQ4_NL: return F<DType::IQ4_NL, packed::kIQ4_NL>::run(p, args...);
    case DType::IQ4_XS: return F<DType::IQ4_XS, packed::kIQ4_XS>::run(p, args...);
    case DType::MXFP4: return F<DType::MXFP4, packed::kMXFP4>::run(p, args...);
    default: return;  // pack_matrix produces only the types above
  }
}

template <DType T, const Layout& L>
struct RunRange {
  static void run(const Problem& p, const detail::WorkRange& wr, WorkerScratch& ws) { run_range_of<T, L>(p, wr, ws); }
};
template <DType T, const Layout& L>
struct StageRange {
  static void run(const Problem& p, int64_t t0, int64_t t1) { stage_range_of<T, L>(p, t0, t1); }
};

}  // namespace

void packed_run_range(const Problem& p, const detail::WorkRange& wr, WorkerScratch& ws) {
  for_type<RunRange>(p, wr, ws);
}

void packed_stage_acts(const Problem& p, int64_t t0, int64_t t1) {
  for_type<StageRange>(p, t0, t1);
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
