#pragma once
// The AMX path's prefill tile: 16 tokens x 16 rows (a pair of 8-row groups)
// per tile instruction, for the level-2 variants (amx on the tile unit,
// amx_model on its software model: isa/tile_unit.h).
//
// The staged block of a group pair (StagedBlock::v, 8 x 64 bytes: row g holds
// q[r][4g + i] at byte 4r + i, rows of the second group in bytes 32-63) is
// already the B operand of a tile dot in its VNNI layout, and the token
// block's int8 activations, restaged block-major (ActStage::xt: 16 tokens of
// a block in 512 contiguous bytes), are the A operand. So tdpbsud (signed
// activations x unsigned weights; tdpbssd for weights staged signed,
// kSignedStaged) gives per block the [16 tokens, 16 rows] int32 sums the
// 512-bit tile gets from 128 vpdpbusd, and the float epilogue is the wide
// tile's, lane for lane (finish_block; Q4_K and Q5_K: the scaled sums of a
// record, then finish_record_wide): results are bit-identical to the
// AVX-512 path.
//
// Every block has its own per-row scales, so each block's sums leave the tile
// unit (tilestored) for the AVX-512 epilogue. Tile registers are not renamed:
// with one accumulator tile, a block's dot waited for the previous block's
// store, and the epilogue's loads waited for that store. Two accumulator sets
// alternate instead (tiles_amx). Weights with a scale per 16 (Q6_K, Q2_K,
// Q3_K) keep the 512-bit tiles: kernels::amx_int8_tiles_for.
#include "kernels/isa/packed_tiles_wide.h"
#include "kernels/isa/tile_unit.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

constexpr int kAmxToks = 16;
// The bytes a tile load or store spans (Tiles::load): A, 16 rows of 32 bytes;
// B, 8 rows of 64; C, 16 rows of 64.
constexpr int64_t kSpanA = 512, kSpanB = 512, kSpanC = 1024;

// Tile registers: two sets of A [16 tokens, 32 bytes] (one block's
// activations), B [8, 64 bytes] (the staged weight vectors of a block) and
// C [16 tokens, 16 rows] int32.
constexpr int kTA[2] = {0, 3}, kTB[2] = {1, 4}, kTC[2] = {2, 5};

inline tmul::TileConfig amx_tile_config() {
  tmul::TileConfig c;
  c.palette = 1;
  for (int s = 0; s < 2; ++s) {
    tmul::set_tile(c, kTA[s], kAmxToks, 32);
    tmul::set_tile(c, kTB[s], 8, 64);
    tmul::set_tile(c, kTC[s], kAmxToks, 64);
  }
  return c;
}

// Tile configuration held for a scope (the tiles of this thread).
struct TileScope {
  TileScope() { Tiles::load_config(amx_tile_config()); }
  ~TileScope() { Tiles::release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// Starts block sb's dot into accumulator set S. xb: the block's 16 tokens'
// activations, 32 bytes apart.
template <const Layout& L, int S>
inline void issue_block(const StagedBlock& sb, const int8_t* xb) {
  Tiles::zero<kTC[S]>();
  Tiles::load<kTA[S], kSpanA>(xb, 32);
  Tiles::load<kTB[S], kSpanB>(&sb.v[0], 64);
  if constexpr (kSignedStaged<L>) Tiles::dot_ss<kTC[S], kTA[S], kTB[S]>();
  else Tiles::dot_su<kTC[S], kTA[S], kTB[S]>();
}

// Accumulator set S's sums to c.
template <int S>
inline void store_block(int32_t* c) {
  Tiles::store<kTC[S], kSpanC>(c, 64);
}

// The epilogue of staged block i (block b0 + i) for the 16 tokens from tt of
// the token block: c as store_block wrote it. kIntSums layouts add the
// block's scaled sums to isum [16 tokens, 16 rows] and finish a record at
// its last block (record_wide's operations, so the same bits).
template <const Layout& L>
[[gnu::always_inline]] inline void finish_tile_block(const StagedBlock* st, int i, int64_t b0, const int32_t* c,
                                                     const packed::ActStage& as, int64_t tt, int32_t* isum,
                                                     __m512* acc) {
  if constexpr (kIntSums<L>) {
    const __m512i sc = _mm512_load_si512(&st[i].sc);
    const bool first = i % 8 == 0;  // chunks start on records
#pragma GCC unroll 16
    for (int t = 0; t < kAmxToks; ++t) {
      const __m512i m = _mm512_mullo_epi32(_mm512_load_si512(c + 16 * t), sc);
      _mm512_store_si512(isum + 16 * t, first ? m : _mm512_add_epi32(_mm512_load_si512(isum + 16 * t), m));
    }
    if (i % 8 == 7) {
#pragma GCC unroll 16
      for (int t = 0; t < kAmxToks; ++t)
        finish_record_wide(st + i - 7, _mm512_load_si512(isum + 16 * t), as, b0 + i - 7, tt + t, acc[t]);
    }
    return;
  }
  constexpr int64_t S = packed::kActStageToks;
  const int64_t k = (b0 + i) * S + tt;
  // Unrolled, so that acc stays in 16 registers rather than on the stack.
#pragma GCC unroll 16
  for (int t = 0; t < kAmxToks; ++t) finish_block<L>(st[i], _mm512_load_si512(c + 16 * t), as, k + t, acc[t]);
}

// Token tiles [tb + 16k, tb + 16k + 16), k < n_tiles, of groups grp and
// grp + 1 over the staged blocks [b0, b0 + nb): per tile as tile_wide<L, 16>
// with tt0 = 16k and acc_io + 256k (acc_io: [16 n_tiles, 16], as
// run_group_pair_staged keeps it). The steps (tile k, block i) form one
// pipeline with two in flight on the tile unit: step j's sums are stored
// while step j + 1's dot runs, and finished one step later, when the stored
// rows have reached the cache (a load right behind a tile store waits for it).
template <const Layout& L>
void tiles_amx(const Problem& p, int64_t grp, int64_t tb, int n_tiles, const StagedBlock* st, int64_t b0, int nb,
               const packed::ActStage& as, float* acc_io, bool first, bool last) {
  static_assert(!L.q6, "a scale per 16 weights: see amx_int8_tiles_for");
  constexpr int64_t S = packed::kActStageToks;
  alignas(64) int32_t c[2][kAmxToks * 16];  // per set: [16 tokens, 16 rows]
  alignas(64) int32_t isum[kAmxToks * 16];  // kIntSums: the record's sums so far, [16 tokens, 16 rows]
  const int n_steps = n_tiles * nb;
  // Block i of token tile k: its 16 tokens' activations.
  auto x_of = [&](int j) { return as.xt + ((b0 + j % nb) * S + kAmxToks * (j / nb)) * 32; };
  issue_block<L, 0>(st[0], x_of(0));
  if (n_steps > 1) issue_block<L, 1>(st[1 % nb], x_of(1));
  __m512 acc[kAmxToks];
  for (int k = 0; k < n_tiles; ++k) {
    float* tile_io = acc_io + kAmxToks * 16 * k;
#pragma GCC unroll 16
    for (int t = 0; t < kAmxToks; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_load_ps(tile_io + 16 * t);
    for (int i = 0; i < nb; ++i) {
      const int j = k * nb + i;
      const int j2 = j + 2;
      if (j & 1) {
        store_block<1>(c[1]);
        if (j2 < n_steps) issue_block<L, 1>(st[j2 % nb], x_of(j2));
      } else {
        store_block<0>(c[0]);
        if (j2 < n_steps) issue_block<L, 0>(st[j2 % nb], x_of(j2));
      }
      if (i > 0) finish_tile_block<L>(st, i - 1, b0, c[(j - 1) & 1], as, kAmxToks * k, isum, acc);
    }
    // The tile's last block, stored in the last step.
    finish_tile_block<L>(st, nb - 1, b0, c[(k * nb + nb - 1) & 1], as, kAmxToks * k, isum, acc);
    store_tile_rows<kAmxToks>(p, grp, tb + kAmxToks * k, acc, tile_io, last);
  }
}

}  // namespace
}  // namespace stride::isa::STRIDE_ISA_NS
