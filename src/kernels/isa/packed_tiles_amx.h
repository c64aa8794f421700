#pragma once
// The AMX path's prefill tile: 16 tokens x 16 rows (a pair of 8-row groups)
// per tile instruction, for the level-2 variants (amx on the tile unit,
// amx_model on its software model: isa/tile_unit.h).
//
// The staged block of a group pair (StagedBlock::v, 8 x 64 bytes: row g holds
// q[r][4g + i] at byte 4r + i, rows of the second group in bytes 32-63) is
// already the B operand of a tile dot in its VNNI layout, and 16 tokens' int8
// activations of a block (32 bytes each, one row stride apart) are the A
// operand as they lie. So tdpbsud (signed activations x unsigned weights;
// tdpbssd for weights staged signed, kSignedStaged) gives per block the
// [16 tokens, 16 rows] int32 sums the 512-bit tile gets from 128 vpdpbusd,
// and the float epilogue is the wide tile's, lane for lane (finish_block):
// results are bit-identical to the AVX-512 path.
#include "kernels/isa/packed_tiles_wide.h"
#include "kernels/isa/tile_unit.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

// Tile registers and their shapes (amx_tile_config).
enum AmxTile : int {
  kTA = 0,     // [16 tokens, 32 bytes]: one block's activations
  kTB = 1,     // [8, 64 bytes]: the staged weight vectors of a block
  kTC = 2,     // [16 tokens, 16 rows] int32
  kTALo = 3,   // [16 tokens, 16 bytes]: elements 0-15 (scale pairs: q6 layouts)
  kTAHi = 4,   // [16 tokens, 16 bytes]: elements 16-31
  kTBLo = 5,   // [4, 64 bytes]: vectors 0-3
  kTBHi = 6,   // [4, 64 bytes]: vectors 4-7
  kTCHi = 7,   // [16 tokens, 16 rows] int32 of the high half
};
constexpr int kAmxToks = 16;

inline tmul::TileConfig amx_tile_config() {
  tmul::TileConfig c;
  c.palette = 1;
  tmul::set_tile(c, kTA, kAmxToks, 32);
  tmul::set_tile(c, kTB, 8, 64);
  tmul::set_tile(c, kTC, kAmxToks, 64);
  tmul::set_tile(c, kTALo, kAmxToks, 16);
  tmul::set_tile(c, kTAHi, kAmxToks, 16);
  tmul::set_tile(c, kTBLo, 4, 64);
  tmul::set_tile(c, kTBHi, 4, 64);
  tmul::set_tile(c, kTCHi, kAmxToks, 64);
  return c;
}

// Tokens [t0, t0 + 16) of groups grp and grp + 1 over the staged blocks
// [b0, b0 + nb), as tile_wide<L, 16> (same arguments and accumulator layout).
template <const Layout& L>
void tile_amx(const Problem& p, int64_t grp, int64_t t0, const StagedBlock* st, int64_t b0, int nb,
              const packed::ActStage& as, int64_t tt0, float* acc_io, bool first, bool last) {
  const QuantizedActs& a = *p.a;
  const int8_t* x0 = a.q_row(t0);
  const int64_t x_stride = a.row_blocks * kActBlock;
  alignas(64) int32_t c[kAmxToks * 16];     // [16 tokens, 16 rows]
  alignas(64) int32_t c_hi[kAmxToks * 16];  // q6 layouts: the high halves' sums
  __m512 acc[kAmxToks];
  for (int t = 0; t < kAmxToks; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc_io + 16 * t);
  for (int i = 0; i < nb; ++i) {
    const int64_t b = b0 + i;
    const StagedBlock& sb = st[i];
    const int8_t* xb = x0 + b * 32;
    if constexpr (L.q6) {
      Tiles::zero<2>();
      Tiles::zero<7>();
      Tiles::load<3>(xb, x_stride);
      Tiles::load<4>(xb + 16, x_stride);
      Tiles::load<5>(&sb.v[0], 64);
      Tiles::load<6>(&sb.v[4], 64);
      if constexpr (kSignedStaged<L>) {
        Tiles::dot_ss<2, 3, 5>();
        Tiles::dot_ss<7, 4, 6>();
      } else {
        Tiles::dot_su<2, 3, 5>();
        Tiles::dot_su<7, 4, 6>();
      }
      Tiles::store<2>(c, 64);
      Tiles::store<7>(c_hi, 64);
    } else {
      Tiles::zero<2>();
      Tiles::load<0>(xb, x_stride);
      Tiles::load<1>(&sb.v[0], 64);
      if constexpr (kSignedStaged<L>) Tiles::dot_ss<2, 0, 1>();
      else Tiles::dot_su<2, 0, 1>();
      Tiles::store<2>(c, 64);
    }
    const int64_t k = b * packed::kActStageToks + tt0;
    for (int t = 0; t < kAmxToks; ++t) {
      __m512i idot = _mm512_load_si512(c + 16 * t);
      if constexpr (L.q6) {
        const __m512i pairs = _mm512_load_si512(&sb.pairs);
        const __m512i sc_lo = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16);
        const __m512i sc_hi = _mm512_srai_epi32(pairs, 16);
        idot = _mm512_add_epi32(_mm512_mullo_epi32(idot, sc_lo),
                                _mm512_mullo_epi32(_mm512_load_si512(c_hi + 16 * t), sc_hi));
      }
      finish_block<L>(sb, idot, as, k + t, acc[t]);
    }
  }
  store_tile_rows<kAmxToks>(p, grp, t0, acc, acc_io, last);
}

}  // namespace
}  // namespace stride::isa::STRIDE_ISA_NS
