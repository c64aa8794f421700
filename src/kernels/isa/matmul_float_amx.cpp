// The float matmul (f32, f16, bf16 weights) on the AMX tile unit: bf16 tile
// dot products summed in f32. A kernel variant of the amx target (chosen
// where the CPU has AMX-BF16 and Linux granted the process tile data, after
// the start-up check, amx_check.h) and of amx_model (the tile instructions
// run by their software model, so machines without AMX test this code).
//
// Every token goes through the same 16-token tiles (unused columns are
// zero), decode as well as prefill, so an output does not depend on the
// batch its token came in. Operands of one 32-element slice s of n_in:
//   A [16 rows, 32] bf16: weight term i (bf16 weights: 1 term, f16: 2,
//     f32: 3; the terms add up to the weight exactly), read from the tensor
//     where its rows are bf16 whole slices (and not packed), otherwise
//     staged (stage_rows);
//   B [16 pairs, 16 tokens, 2] bf16: activation term j (kBf16Terms terms
//     that leave less than 2^-26 |x|; FloatMatmul::x_tiles);
//   C [16 rows, 16 tokens] f32, summed over s, then i, then j.
// Only the products with i + j <= 2 are taken: each one left out is below
// 2^-24 |w x|.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/matmul_float_rows.h"
#include "kernels/tmul_config.h"
#include "kernels/tmul_model.h"

#include "kernels/isa/begin.h"
#include "kernels/isa/tile_unit.h"

namespace stride::isa::STRIDE_ISA_NS {

namespace {

using detail::WorkRange;
using kernels::FloatMatmul;
namespace frows = detail::float_rows;

constexpr int kSliceElems = 32;
constexpr int64_t kTileHalves = 16 * 32;  // bf16 elements of one A or B tile
constexpr int kActTerms = kernels::kBf16Terms;

template <typename L>
constexpr int weight_terms() {
  return std::is_same_v<L, frows::F32> ? 3 : std::is_same_v<L, frows::F16> ? 2 : 1;
}

// The bf16 nearest to each lane (ties to even), as 16 bf16.
inline __m256i bf16_nearest(__m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
inline __m512 bf16_widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Writes v as n_terms bf16 terms, largest first: term k at out + k * step.
inline void split_terms(__m512 v, int n_terms, uint16_t* out, int64_t step) {
  for (int k = 0; k < n_terms; ++k) {
    const __m256i h = bf16_nearest(v);
    _mm256_storeu_si256((__m256i*)(out + k * step), h);
    v = _mm512_sub_ps(v, bf16_widen(h));  // exact: the rest of v
  }
}

inline __mmask16 first_lanes(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << std::max<int64_t>(n, 0)) - 1u); }

// 16 weights of a row from element k, of which n exist, widened to f32.
template <typename L>
__m512 load_weights(const uint8_t* row, int64_t k, int64_t n) {
  const __mmask16 m = first_lanes(n);
  if constexpr (std::is_same_v<L, frows::F32>) return _mm512_maskz_loadu_ps(m, (const float*)row + k);
  const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t*)row + k);
  if constexpr (std::is_same_v<L, frows::F16>) return _mm512_cvtph_ps(h);
  else return bf16_widen(h);
}

// The same from packed weights (FloatMatmul::packed): row `lane`'s 8-element
// groups lie 64 elements apart; n is a multiple of 8.
template <typename L>
__m512 load_packed_weights(const uint8_t* lane, int64_t k, int64_t n) {
  using E = typename L::Elem;
  if (n <= 0) return _mm512_setzero_ps();
  const E* lo = (const E*)lane + 8 * k;
  const E* hi = lo + 64;
  if constexpr (std::is_same_v<E, float>) {
    const __m256 h = n > 8 ? _mm256_loadu_ps(hi) : _mm256_setzero_ps();
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(lo)), h, 1);
  } else {
    const __m128i h = n > 8 ? _mm_loadu_si128((const __m128i*)hi) : _mm_setzero_si128();
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)lo)), h, 1);
    if constexpr (std::is_same_v<L, frows::F16>) return _mm512_cvtph_ps(v);
    else return bf16_widen(v);
  }
}

}  // namespace

// out [n_tiles, kActTerms, n_slices, 16 pairs, 16 tokens, 2] for token tiles
// [tile_begin, tile_end) of x [n_tok, n_in]; tokens past n_tok and elements
// past n_in are zeros.
void prepare_x_tiles(const float* x, int64_t n_tok, int64_t n_in, uint16_t* out, int64_t tile_begin,
                     int64_t tile_end) {
  const int64_t n_slices = (n_in + kSliceElems - 1) / kSliceElems;
  alignas(64) uint16_t terms[16][kActTerms][kSliceElems];  // one slice of 16 tokens
  // Dword (pair) kk of token t's term j lies at dword t * 48 + j * 16 + kk.
  const __m512i token_dwords = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(kActTerms * 16));
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    for (int64_t s = 0; s < n_slices; ++s) {
      const int64_t k0 = s * kSliceElems;
      for (int t = 0; t < 16; ++t) {
        const int64_t tok = tile * 16 + t;
        for (int h = 0; h < 2; ++h) {
          const int64_t k = k0 + 16 * h;
          const __m512 v = tok < n_tok ? _mm512_maskz_loadu_ps(first_lanes(n_in - k), x + tok * n_in + k)
                                       : _mm512_setzero_ps();
          split_terms(v, kActTerms, &terms[t][0][16 * h], kSliceElems);
        }
      }
      for (int j = 0; j < kActTerms; ++j) {
        uint16_t* dst = out + ((tile * kActTerms + j) * n_slices + s) * kTileHalves;
        for (int kk = 0; kk < 16; ++kk) {
          const __m512i idx = _mm512_add_epi32(token_dwords, _mm512_set1_epi32(j * 16 + kk));
          _mm512_storeu_si512(dst + 32 * kk, _mm512_i32gather_epi32(idx, terms, 4));
        }
      }
    }
  }
}

namespace {

// Where the A tiles of a 16-row block lie: term i of slice s at
// base + i * term_step + s * slice_step, rows `stride` bytes apart.
struct ATiles {
  const uint8_t* base;
  int64_t stride, term_step, slice_step;
  const uint8_t* at(int i, int64_t s) const { return base + i * term_step + s * slice_step; }
};

// Rows [r0, r0 + 16) of w (rows past n_out: zeros) as out [W, n_slices, 16, 32] bf16.
template <typename L>
ATiles stage_rows(const FloatMatmul& p, int64_t r0, int64_t n_slices, uint16_t* out) {
  constexpr int W = weight_terms<L>();
  const int64_t term_step = n_slices * kTileHalves;
  for (int r = 0; r < 16; ++r) {
    const bool real = r0 + r < p.n_out;
    const uint8_t* row = !real ? nullptr : p.packed ? frows::packed_lane<L>(*p.packed, r0 + r) : p.w->row(r0 + r);
    for (int64_t s = 0; s < n_slices; ++s)
      for (int h = 0; h < 2; ++h) {
        const int64_t k = s * kSliceElems + 16 * h;
        const __m512 v = !real     ? _mm512_setzero_ps()
                         : p.packed ? load_packed_weights<L>(row, k, p.n_in - k)
                                    : load_weights<L>(row, k, p.n_in - k);
        split_terms(v, W, out + s * kTileHalves + r * kSliceElems + 16 * h, term_step);
      }
  }
  return {(const uint8_t*)out, 2 * kSliceElems, 2 * term_step, 2 * kTileHalves};
}

// Tile registers (all [16, 64 bytes]): C[rb][tt] = 2 rb + tt, A[rb] = 4 + rb,
// B[tt] = 6 + tt. The tile instructions take register numbers as literals.
inline tmul::TileConfig float_tile_config() {
  tmul::TileConfig c;
  c.palette = 1;
  for (int t = 0; t < tmul::kTiles; ++t) tmul::set_tile(c, t, 16, 64);
  return c;
}
inline void zero_c(int c) {
  switch (c) {
    case 0: Tiles::zero<0>(); break;
    case 1: Tiles::zero<1>(); break;
    case 2: Tiles::zero<2>(); break;
    default: Tiles::zero<3>(); break;
  }
}
inline void store_c(int c, float* out) {
  switch (c) {
    case 0: Tiles::store<0>(out, 64); break;
    case 1: Tiles::store<1>(out, 64); break;
    case 2: Tiles::store<2>(out, 64); break;
    default: Tiles::store<3>(out, 64); break;
  }
}
inline void load_a(int rb, const void* p, int64_t stride) {
  if (rb == 0) Tiles::load<4>(p, stride);
  else Tiles::load<5>(p, stride);
}
inline void load_b(int tt, const void* p) {
  if (tt == 0) Tiles::load<6>(p, 64);
  else Tiles::load<7>(p, 64);
}
inline void dot(int rb, int tt) {
  switch (2 * rb + tt) {
    case 0: Tiles::dot_bf16<0, 4, 6>(); break;
    case 1: Tiles::dot_bf16<1, 4, 7>(); break;
    case 2: Tiles::dot_bf16<2, 5, 6>(); break;
    default: Tiles::dot_bf16<3, 5, 7>(); break;
  }
}

// RB row blocks x TT token tiles over every slice: c [RB * TT, 16 rows, 16 tokens].
template <int W, int RB, int TT>
void tile_block(const ATiles* a, const uint16_t* const* b, int64_t n_slices, float* c) {
  for (int rb = 0; rb < RB; ++rb)
    for (int tt = 0; tt < TT; ++tt) zero_c(2 * rb + tt);
  for (int64_t s = 0; s < n_slices; ++s)
    for (int i = 0; i < W; ++i) {
      for (int rb = 0; rb < RB; ++rb) load_a(rb, a[rb].at(i, s), a[rb].stride);
      for (int j = 0; i + j <= 2; ++j)
        for (int tt = 0; tt < TT; ++tt) {
          load_b(tt, b[tt] + (j * n_slices + s) * kTileHalves);
          for (int rb = 0; rb < RB; ++rb) dot(rb, tt);
        }
    }
  for (int rb = 0; rb < RB; ++rb)
    for (int tt = 0; tt < TT; ++tt) store_c(2 * rb + tt, c + (rb * TT + tt) * 256);
}

// y rows [r0, r_end) (at most 16) x tokens [t_lo, t_hi) of tile `tile` from c [16 rows, 16 tokens].
inline void store_rows(const FloatMatmul& p, const float* c, int64_t r0, int64_t r_end, int64_t tile, int64_t t_lo,
                       int64_t t_hi) {
  const __mmask16 rows = first_lanes(r_end - r0);
  const __m512i column = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(16));
  for (int64_t tok = std::max(t_lo, tile * 16); tok < std::min(t_hi, tile * 16 + 16); ++tok) {
    const __m512 v = _mm512_i32gather_ps(_mm512_add_epi32(column, _mm512_set1_epi32((int)(tok - tile * 16))), c, 4);
    _mm512_mask_storeu_ps(p.y + tok * p.n_out + r0, rows, v);
  }
}

template <typename L>
void run_range(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) {
  constexpr int W = weight_terms<L>();
  const int64_t n_slices = (p.n_in + kSliceElems - 1) / kSliceElems;
  const int64_t stage_halves = W * n_slices * kTileHalves;
  // bf16 rows of whole slices are A tiles as they lie.
  const bool direct = std::is_same_v<L, frows::BF16> && p.n_in % kSliceElems == 0 && !p.packed;
  uint16_t* stage = kernels::amx_weight_stage(ws, 2 * stage_halves);
  const int64_t tile0 = wr.t0 / 16, tile1 = (wr.t1 + 15) / 16;
  const int64_t tile_step = kActTerms * n_slices * kTileHalves;
  const tmul::TileConfig cfg = float_tile_config();
  Tiles::load_config(cfg);
  alignas(64) float c[4 * 256];
  for (int64_t r = wr.r0; r < wr.r1; r += 32) {
    const int rbs = wr.r1 - r > 16 ? 2 : 1;
    ATiles a[2];
    for (int rb = 0; rb < rbs; ++rb) {
      const int64_t r0 = r + 16 * rb;
      if (direct && r0 + 16 <= p.n_out) a[rb] = {p.w->row(r0), p.n_in * 2, 0, 2 * kSliceElems};
      else a[rb] = stage_rows<L>(p, r0, n_slices, stage + rb * stage_halves);
    }
    for (int64_t tile = tile0; tile < tile1; tile += 2) {
      const int tts = tile1 - tile >= 2 ? 2 : 1;
      const uint16_t* b[2] = {p.x_tiles + tile * tile_step, p.x_tiles + (tile + tts - 1) * tile_step};
      if (rbs == 2 && tts == 2) tile_block<W, 2, 2>(a, b, n_slices, c);
      else if (rbs == 2) tile_block<W, 2, 1>(a, b, n_slices, c);
      else if (tts == 2) tile_block<W, 1, 2>(a, b, n_slices, c);
      else tile_block<W, 1, 1>(a, b, n_slices, c);
      for (int rb = 0; rb < rbs; ++rb)
        for (int tt = 0; tt < tts; ++tt) {
          const int64_t r0 = r + 16 * rb;
          store_rows(p, c + (rb * tts + tt) * 256, r0, std::min(r0 + 16, wr.r1), tile + tt, wr.t0, wr.t1);
        }
    }
  }
  Tiles::release();
}

}  // namespace

void matmul_f32(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) { run_range<frows::F32>(p, wr, ws); }
void matmul_f16(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) { run_range<frows::F16>(p, wr, ws); }
void matmul_bf16(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) { run_range<frows::BF16>(p, wr, ws); }

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
