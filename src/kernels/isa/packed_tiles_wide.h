#pragma once
// The AVX-512 path's wide tile: two 8-row groups side by side in each 512-bit
// register (rows of group g in the low half, of group g + 1 in the high half),
// so one vpdpbusd serves 16 rows and the float epilogue runs once per 16 rows.
// The variants of level 1 and up (VNNI). Every lane does the integer and float operations of the 256-bit
// tile in the same order, so the results are bit-identical to it.
//
// Staging: the weight vectors of a chunk of blocks of the pair are unpacked
// once (nibble masks, shifts, 256-bit halves joined) into a buffer that stays
// in L1, with the per-row float factors of each block, and every token tile of
// the token block reads them back with plain loads. On CPUs that run 512-bit
// integer and float operations on the same two ports as vpdpbusd, the unpack
// and scale conversions otherwise take a quarter of those ports' slots in
// every 8-token tile.
#include "kernels/isa/packed_tiles_core.h"

#if STRIDE_ISA_LEVEL >= 1
namespace stride::isa::STRIDE_ISA_NS {
namespace {

inline __m512i pair512(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
inline __m512 pair512(__m256 lo, __m256 hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}
inline __m512i load2(const uint8_t* a, const uint8_t* b) { return pair512(packed::load(a), packed::load(b)); }

// Vector g of block `sub` of both groups (sa: group g0, sb: group g0 + 1),
// as packed::vec builds it for one.
template <const Layout& L>
inline __m512i vec2(const uint8_t* sa, const uint8_t* sb, int g) {
  if constexpr (L.lut != packed::Lut::kNone) {
    const int po = L.p_off + 32 * (g & 3);
    const __m512i p = load2(sa + po, sb + po);
    const __m512i idx = _mm512_and_si512(g < 4 ? p : _mm512_srli_epi16(p, 4), _mm512_set1_epi8(0x0F));
    const __m128i grid = _mm_loadu_si128((const __m128i*)packed::lut_levels(L.lut));
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(grid), idx);
  } else if constexpr (L.is_signed) {
    return load2(sa + 32 * g, sb + 32 * g);
  } else if constexpr (L.q2_off >= 0) {
    const int qo = L.q2_off + 32 * (g & 1);
    __m512i v = _mm512_and_si512(_mm512_srli_epi16(load2(sa + qo, sb + qo), 2 * (g >> 1)), _mm512_set1_epi8(3));
    if constexpr (L.h_off >= 0) {
      const __m512i h = _mm512_and_si512(load2(sa + L.h_off, sb + L.h_off), _mm512_set1_epi8((char)(1 << g)));
      v = _mm512_or_si512(v, g <= 2 ? _mm512_slli_epi16(h, 2 - g) : _mm512_srli_epi16(h, g - 2));
    }
    return v;
  } else {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const int po = L.p_off + 32 * (g & 3);
    const __m512i p = load2(sa + po, sb + po);
    __m512i v = g < 4 ? _mm512_and_si512(p, nib) : _mm512_and_si512(_mm512_srli_epi16(p, 4), nib);
    if constexpr (L.h_off >= 0) {
      const __m512i h = _mm512_and_si512(load2(sa + L.h_off, sb + L.h_off), _mm512_set1_epi8((char)(1 << g)));
      v = _mm512_or_si512(v, g <= 4 ? _mm512_slli_epi16(h, 4 - g) : _mm512_srli_epi16(h, g - 4));
    }
    if constexpr (L.h2_off >= 0) {
      const int sh = 2 * (g & 3);
      const int ho = L.h2_off + 32 * (g >> 2);
      const __m512i h = _mm512_and_si512(load2(sa + ho, sb + ho), _mm512_set1_epi8((char)(3 << sh)));
      v = _mm512_or_si512(v, sh <= 4 ? _mm512_slli_epi16(h, 4 - sh) : _mm512_srli_epi16(h, sh - 4));
    }
    return v;
  }
}

// One block of a group pair, ready for vpdpbusd: 16 rows in every vector.
// Signed layouts keep their signed vectors, and layouts with an integer
// offset have it taken off (kSignedStaged): vpdpbusd takes these as its signed
// operand against the activations + 128 (kUnsignedActs), and tdpbssd (AMX)
// as they are.
// kIntSums layouts keep a record's factors in its blocks: block s's integer
// scales in sc, the record's d and -dmin in its first block's D and M, and
// the int16 min pairs of blocks (2i, 2i + 1) in block i's mp (i < 4).
struct StagedBlock {
  __m512i v[8];     // vector g
  __m512 D, M;      // per-row factors: x = D * q (+ M, see tile_wide)
  __m512i pairs;    // q6: int16 (scale lo, scale hi) per row
  __m512i mp;       // min16: int16 (min lo, min hi) per row
  __m512i sc;       // kIntSums: the block's scales, int32 per row
  __m512i bias;     // kSignedStaged: -128 * Σ q per row over vectors 0-7 (q6: 0-3)
  __m512i bias_hi;  // kSignedStaged q6 layouts: -128 * Σ q over vectors 4-7
};
// 16 blocks (16 x 896 B = 14 KiB): two K-quant records, in L1 beside the
// token block's int8 activations.
constexpr int kStageBlocks = 16;
static_assert(kStageBlocks % 8 == 0, "kIntSums tiles take whole records");

// A record's factors for both groups of a pair (RecordScales, 16 rows).
// Where they are the same for every block of the record (all layouts but
// Q4_K, Q5_K and IQ4_XS) they are joined once; a K-quant block's scales and
// mins of the two groups convert as one vector.
template <const Layout& L>
struct PairRecordScales {
  static constexpr bool kKQuant = L.offset == packed::Offset::kKQuant;
  static constexpr bool kPerBlock = kKQuant || (L.lut == packed::Lut::kIq4 && L.blocks > 1);
  static constexpr bool kHasM = kFloatOffset<L> || L.min16;
  packed::RecordScales<L> a, b;
  __m512 d, dmin;  // kKQuant: a's and b's d, dmin; !kPerBlock: every block's D, M
  PairRecordScales(const uint8_t* ra, const uint8_t* rb) : a(ra), b(rb) {
    if constexpr (kKQuant) {
      d = pair512(a.d, b.d);
      dmin = pair512(a.dmin, b.dmin);
    } else if constexpr (!kPerBlock) {
      join(ra, rb, 0, d, dmin);
    }
  }
  // Block s's factors (RecordScales::block) of the records ra and rb.
  void block(const uint8_t* ra, const uint8_t* rb, int s, __m512& D, __m512& M) const {
    if constexpr (kKQuant) {
      D = _mm512_mul_ps(d, u8x16_to_f32(ra + 32 + 8 * s, rb + 32 + 8 * s));
      M = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dmin, u8x16_to_f32(ra + 96 + 8 * s, rb + 96 + 8 * s)));
    } else if constexpr (kPerBlock) {
      join(ra, rb, s, D, M);
    } else {
      D = d;
      if constexpr (kHasM) M = dmin;
    }
  }

 private:
  void join(const uint8_t* ra, const uint8_t* rb, int s, __m512& D, __m512& M) const {
    __m256 Da, Ma, Db, Mb;
    a.block(ra, s, Da, Ma);
    b.block(rb, s, Db, Mb);
    D = pair512(Da, Db);
    if constexpr (kHasM) M = pair512(Ma, Mb);
  }
  // 8 bytes at pa (the low 8 lanes) and 8 at pb, as floats.
  static __m512 u8x16_to_f32(const uint8_t* pa, const uint8_t* pb) {
    int64_t va, vb;
    std::memcpy(&va, pa, 8);
    std::memcpy(&vb, pb, 8);
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_set_epi64x(vb, va)));
  }
};

// Block s of the records ra and rb (scales: their factors) into out.
template <const Layout& L>
inline void stage_block(const uint8_t* ra, const uint8_t* rb, int s, const PairRecordScales<L>& scales,
                        StagedBlock& out) {
  const uint8_t* sa = ra + L.header + s * L.sub;
  const uint8_t* sb = rb + L.header + s * L.sub;
  [[maybe_unused]] __m512i q_sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    __m512i v = vec2<L>(sa, sb, g);
    if constexpr (kQuantOffset<L> > 0) v = _mm512_sub_epi8(v, _mm512_set1_epi8((char)kQuantOffset<L>));
    out.v[g] = v;
    if constexpr (kSignedStaged<L>)
      q_sum[L.q6 && g >= 4] = _mm512_dpbusd_epi32(q_sum[L.q6 && g >= 4], _mm512_set1_epi8(1), v);
  }
  // Σ (x + 128) q - 128 Σ q = Σ x q, exactly (int32, no saturation).
  if constexpr (kSignedStaged<L>) {
    out.bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(q_sum[0], 7));
    if constexpr (L.q6) out.bias_hi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(q_sum[1], 7));
  }
  if constexpr (kIntSums<L>) {
    out.sc = pair512(packed::kquant_scales(ra, s), packed::kquant_scales(rb, s));
    if (s == 0) {
      out.D = scales.d;
      out.M = _mm512_sub_ps(_mm512_setzero_ps(), scales.dmin);
    }
    if (s < 4) out.mp = pair512(packed::kquant_min_pairs(ra, s), packed::kquant_min_pairs(rb, s));
    return;
  }
  __m512 D, M;
  scales.block(ra, rb, s, D, M);
  out.D = D;
  if constexpr (PairRecordScales<L>::kHasM) out.M = M;
  if constexpr (L.q6) out.pairs = pair512(packed::q6_scale_pairs(sa), packed::q6_scale_pairs(sb));
  if constexpr (L.min16) out.mp = pair512(packed::min16_pairs(sa), packed::min16_pairs(sb));
}

// Blocks [b0, b0 + nb) of groups grp and grp + 1 into st, a record's blocks
// at a time.
template <const Layout& L>
void stage_blocks(const PackedMatrix& w, int64_t grp, int64_t b0, int nb, StagedBlock* st) {
  const uint8_t* ga = w.data.data() + grp * w.group_bytes;
  const uint8_t* gb = ga + w.group_bytes;
  for (int i = 0; i < nb;) {
    const int64_t b = b0 + i;
    const int s0 = (int)(b % L.blocks);
    const int s1 = std::min(L.blocks, s0 + nb - i);
    const int64_t rec = b / L.blocks;
    const uint8_t* ra = ga + rec * L.record();
    const uint8_t* rb = gb + rec * L.record();
    const PairRecordScales<L> scales(ra, rb);
    for (int s = s0; s < s1; ++s, ++i) stage_block<L>(ra, rb, s, scales, st[i]);
  }
}

// idot[t] = per-row Σ q * x over block b for 16 rows (block_dot_vnni,
// doubled). xq: the tokens' int8 rows; for kSignedStaged layouts, their
// rows + 128 (ActStage::xu).
template <const Layout& L, int T>
inline void block_dot_wide(const StagedBlock& sb, const int8_t* const* xq, int64_t b, __m512i* idot) {
  __m512i hi[L.q6 ? T : 1];
  for (int t = 0; t < T; ++t) idot[t] = kSignedStaged<L> ? _mm512_load_si512(&sb.bias) : _mm512_setzero_si512();
  if constexpr (L.q6)
    for (int t = 0; t < T; ++t) hi[t] = kSignedStaged<L> ? _mm512_load_si512(&sb.bias_hi) : _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m512i v = _mm512_load_si512(&sb.v[g]);
    for (int t = 0; t < T; ++t) {
      int32_t x4;
      std::memcpy(&x4, xq[t] + b * 32 + 4 * g, 4);
      const __m512i xb = _mm512_set1_epi32(x4);
      if constexpr (L.q6) {
        // kSignedStaged: unsigned x + 128, signed q; else unsigned q, signed x
        __m512i& sum = g < 4 ? idot[t] : hi[t];
        sum = kSignedStaged<L> ? _mm512_dpbusd_epi32(sum, xb, v) : _mm512_dpbusd_epi32(sum, v, xb);
      } else if constexpr (kSignedStaged<L>) {
        idot[t] = _mm512_dpbusd_epi32(idot[t], xb, v);  // unsigned x + 128, signed q
      } else {
        idot[t] = _mm512_dpbusd_epi32(idot[t], v, xb);
      }
    }
  }
  if constexpr (L.q6) {
    const __m512i pairs = _mm512_load_si512(&sb.pairs);
    const __m512i sc_lo = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16);
    const __m512i sc_hi = _mm512_srai_epi32(pairs, 16);
    for (int t = 0; t < T; ++t)
      idot[t] = _mm512_add_epi32(_mm512_mullo_epi32(idot[t], sc_lo), _mm512_mullo_epi32(hi[t], sc_hi));
  }
}

// The rest of block b for one token: the block's scales (and float or
// per-16 mins) applied to idot (that token's 16 per-row sums), added to acc. k:
// the token's index in the block-major factors of as (stage_acts).
template <const Layout& L>
inline void finish_block(const StagedBlock& sb, __m512i idot, const packed::ActStage& as, int64_t k, __m512& acc) {
  const __m512 D = _mm512_load_ps(&sb.D);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot), _mm512_mul_ps(D, _mm512_set1_ps(as.d[k])), acc);
  if constexpr (kFloatOffset<L>) acc = _mm512_fmadd_ps(_mm512_load_ps(&sb.M), _mm512_set1_ps(as.s[k]), acc);
  if constexpr (L.min16) {
    const __m512i m32 = _mm512_madd_epi16(_mm512_set1_epi32(as.hs[k]), _mm512_load_si512(&sb.mp));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m32), _mm512_mul_ps(_mm512_load_ps(&sb.M), _mm512_set1_ps(as.d[k])),
                          acc);
  }
}

// The float work of a kIntSums record (st: its 8 staged blocks, the first b)
// for token tt of the token block (finish_record, 16 rows): isum, the
// token's Σ sc * dot over the record's blocks.
inline void finish_record_wide(const StagedBlock* st, __m512i isum, const packed::ActStage& as, int64_t b,
                               int64_t tt, __m512& acc) {
  constexpr int64_t S = packed::kActStageToks;
  const int32_t* ps = as.ps + b / 2 * S + tt;  // pairs of block sums, one row per pair
  __m512i m = _mm512_setzero_si512();
  for (int i = 0; i < 4; ++i) m = _mm512_dpwssd_epi32(m, _mm512_set1_epi32(ps[i * S]), _mm512_load_si512(&st[i].mp));
  const __m512 dx = _mm512_set1_ps(as.d[b * S + tt]);  // the record's first block's d: the super-block's
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(_mm512_load_ps(&st[0].D), dx), acc);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(_mm512_load_ps(&st[0].M), dx), acc);
}

// A kIntSums record (st: its 8 staged blocks, the first b) for T tokens:
// each block's dots times its integer scales, summed in int32, then the
// record's float work once (finish_record, 16 rows).
template <const Layout& L, int T>
inline void record_wide(const StagedBlock* st, const int8_t* const* xq, int64_t b, const packed::ActStage& as,
                        int64_t tt0, __m512* acc) {
  __m512i isum[T];
  for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
  for (int s = 0; s < 8; ++s) {
    __m512i idot[T];
    block_dot_wide<L, T>(st[s], xq, b + s, idot);
    const __m512i sc = _mm512_load_si512(&st[s].sc);
    for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(idot[t], sc));
  }
  for (int t = 0; t < T; ++t) finish_record_wide(st, isum[t], as, b, tt0 + t, acc[t]);
}

// A kScaledSums record (st: its 8 staged blocks, the first b) for T tokens:
// the blocks' scaled dots (block_dot_wide) summed in int32, then the record's
// float work once (finish_scaled_record, 16 rows).
template <const Layout& L, int T>
inline void scaled_record_wide(const StagedBlock* st, const int8_t* const* xq, int64_t b,
                               const packed::ActStage& as, int64_t tt0, __m512* acc) {
  constexpr int64_t S = packed::kActStageToks;
  __m512i isum[T];
  for (int s = 0; s < 8; ++s) {
    __m512i idot[T];
    block_dot_wide<L, T>(st[s], xq, b + s, idot);
    for (int t = 0; t < T; ++t) isum[t] = s == 0 ? idot[t] : _mm512_add_epi32(isum[t], idot[t]);
  }
  const __m512 d = _mm512_load_ps(&st[0].D);
  for (int t = 0; t < T; ++t)
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, _mm512_set1_ps(as.d[b * S + tt0 + t])),
                             acc[t]);
}

// T tokens' sums of 16 rows: kept in acc_io [T, 16] for the next chunk of
// blocks, or after the last one written to the rows of y.
template <int T>
inline void store_tile_rows(const Problem& p, int64_t grp, int64_t t0, const __m512* acc, float* acc_io, bool last) {
  if (!last) {
    for (int t = 0; t < T; ++t) _mm512_store_ps(acc_io + 16 * t, acc[t]);
    return;
  }
  const int64_t n_out = p.w->n_out;
  const int64_t r0 = grp * kPackRows;
  const int64_t n_rows = std::min<int64_t>(2 * kPackRows, n_out - r0);
  const __mmask16 rows = (__mmask16)((1u << n_rows) - 1u);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(p.y + (t0 + t) * n_out + r0, rows, acc[t]);
}

// Tokens [t0, t0 + T) of groups grp and grp + 1 over the staged blocks
// [b0, b0 + nb): acc_io [T, 16] holds the sums of the blocks before b0 (unless
// first); after the last chunk the rows go to y. as: the token block's
// factors (stage_acts), from its token tt0 = t0 - (first token of the block).
template <const Layout& L, int T>
void tile_wide(const Problem& p, int64_t grp, int64_t t0, const StagedBlock* st, int64_t b0, int nb,
               const packed::ActStage& as, int64_t tt0, float* acc_io, bool first, bool last) {
  const QuantizedActs& a = *p.a;
  const int8_t* xq[T];
  for (int t = 0; t < T; ++t)
    xq[t] = kUnsignedActs<L> ? (const int8_t*)as.xu + (tt0 + t) * packed::xu_row_bytes(p.w->n_in / 32)
                             : a.q_row(t0 + t);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc_io + 16 * t);
  if constexpr (kIntSums<L>) {  // chunks start on records (kStageBlocks: two)
    for (int i = 0; i < nb; i += 8) record_wide<L, T>(st + i, xq, b0 + i, as, tt0, acc);
    store_tile_rows<T>(p, grp, t0, acc, acc_io, last);
    return;
  }
  if constexpr (kScaledSums<L>) {  // likewise
    for (int i = 0; i < nb; i += 8) scaled_record_wide<L, T>(st + i, xq, b0 + i, as, tt0, acc);
    store_tile_rows<T>(p, grp, t0, acc, acc_io, last);
    return;
  }
  for (int i = 0; i < nb; ++i) {
    const int64_t b = b0 + i;
    __m512i idot[T];
    block_dot_wide<L, T>(st[i], xq, b, idot);
    const int64_t k = b * packed::kActStageToks + tt0;
    for (int t = 0; t < T; ++t) finish_block<L>(st[i], idot[t], as, k + t, acc[t]);
  }
  store_tile_rows<T>(p, grp, t0, acc, acc_io, last);
}

}  // namespace
}  // namespace stride::isa::STRIDE_ISA_NS
#endif
