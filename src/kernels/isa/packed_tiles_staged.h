#pragma once
// The AVX2 path's staged prefill tiles: for one 8-row group and a token block,
// the weight vectors of a chunk of blocks are unpacked once (nibble masks,
// shifts, the high planes, the grid lookups) into a buffer that stays in L1,
// with each block's per-row float factors and madd multipliers, and every
// 4-token tile of the token block reads them back with plain loads. The
// streaming tile (`tile`) repeats that unpack and the scale conversions in
// every 4-token tile: about a fifth of the vector ALU work per token and
// block. Decode (fewer than kStageMinToks tokens) keeps the streaming tile,
// which prefetches and reads each weight byte once anyway.
//
// The avx2 variant's (level 0). Every lane computes the integer dots of
// `tile` (exactly: Q6_K's by another sum, kUnsignedQ6) and does its float
// operations in the same order, so the results are bit-identical to it (and
// to the VNNI path and the int8 reference, which the kernel tests check).
#include "kernels/isa/packed_tiles_core.h"

#if STRIDE_ISA_LEVEL == 0
namespace stride::isa::STRIDE_ISA_NS {
namespace {

// One block of a group, ready for maddubs: 8 rows in every vector.
struct StagedBlock256 {
  __m256i v[8];    // vector g; signed layouts: |v| (-128 -> 128 unsigned)
  __m256i sgn[8];  // signed layouts: vector g itself, the sign source of x
  __m256 D, M;     // per-row factors: x = D * q (+ M, see tile_staged)
  __m256i f[2];    // q6: madd factors of vectors 0-3 and 4-7 (madd_factor)
  __m256i pairs;   // Q3_K: int16 (scale lo, scale hi) per row
  __m256i mp;      // min16: int16 (min lo, min hi) per row
  __m256i bias;    // Q6_K: 128 * Σ sc * (q - 32) per row over the record's blocks, in its first (kUnsignedActs)
};
// kIntSums layouts keep a record's factors in its blocks, as the 512-bit
// tiles' StagedBlock: block s's scale in both int16 of f[0] (the madd factor,
// so madd scales the dot), the record's d and -dmin in its first block's D
// and M, the int16 min pairs of blocks (2i, 2i + 1) in block i's mp (i < 4).
// 16 blocks: two K-quant records; at most 16 x 736 B = 11.5 KiB (the grid
// layouts, which keep the sign source), 5-7 KiB for the others.
constexpr int kStageBlocks256 = 16;
static_assert(kStageBlocks256 % 8 == 0, "kIntSums tiles take whole records");
// Token blocks at least this wide are staged; narrower ones (decode) stream.
constexpr int64_t kStageMinToks = 4;
// Q8_0's vectors are plain loads with nothing to unpack: staging |v| and v
// doubles the bytes each tile reads for one vpsignb saved, and the staged
// tile ran at about 0.93x of the streaming one (bench_matmul, docs/
// performance.md), so Q8_0 streams at every width.
template <const Layout& L>
constexpr bool kStaged = L.lut != packed::Lut::kNone || !L.is_signed;
// Q6_K (kUnsignedActs): staged as w = q - 32 and multiplied with the
// activations + 128, whose extra 128 * Σ sc * w per row is a constant of the
// block (bias). The dot is the same integer as Σ sc * q * x - 32 * (the half
// sums), but each block and token takes 12 vector multiplies instead of 13
// (the offset correction's madd, shift and broadcast go), and the multiplies
// bound this loop on Zen 2, whose one pipe takes them all
// (bench/micro/uop_count.py). The sign trick would sum four vectors in int16
// instead of two (10 multiplies) but adds a vpsignb per vector and token,
// which costs more than it saves where two ports share both (Intel cores).
template <const Layout& L>
constexpr bool kUnsignedQ6 = kUnsignedActs<L>;

// Block s of the record rec (scales: the record's factors) into out.
template <const Layout& L>
inline void stage_block256(const uint8_t* rec, int s, const packed::RecordScales<L>& scales, StagedBlock256& out) {
  const uint8_t* sub = rec + L.header + s * L.sub;
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    __m256i v = packed::vec<L>(sub, g);
    if constexpr (kUnsignedQ6<L>) v = _mm256_sub_epi8(v, _mm256_set1_epi8((char)kQuantOffset<L>));
    if constexpr (L.is_signed) {
      _mm256_store_si256(&out.v[g], _mm256_sign_epi8(v, v));
      _mm256_store_si256(&out.sgn[g], v);
    } else {
      _mm256_store_si256(&out.v[g], v);
    }
  }
  if constexpr (kIntSums<L>) {
    const __m256i sc = packed::kquant_scales(rec, s);
    _mm256_store_si256(&out.f[0], _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
    if (s == 0) {
      _mm256_store_ps((float*)&out.D, scales.d);
      _mm256_store_ps((float*)&out.M, _mm256_sub_ps(_mm256_setzero_ps(), scales.dmin));
    }
    if (s < 4) _mm256_store_si256(&out.mp, packed::kquant_min_pairs(rec, s));
    return;
  }
  __m256 D, M;
  scales.block(rec, s, D, M);
  _mm256_store_ps((float*)&out.D, D);
  if constexpr (kFloatOffset<L> || L.min16) _mm256_store_ps((float*)&out.M, M);
  if constexpr (L.q6) {
    _mm256_store_si256(&out.f[0], packed::madd_factor<L>(sub, 0));
    _mm256_store_si256(&out.f[1], packed::madd_factor<L>(sub, 4));
  }
  if constexpr (kUnsignedQ6<L>) {
    // Σ sc * w per row: maddubs with ones sums byte pairs (|.| <= 64), four vectors stay in int16.
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i half[2];
    for (int h = 0; h < 2; ++h) {
      half[h] = _mm256_maddubs_epi16(ones, _mm256_load_si256(&out.v[4 * h]));
      for (int g = 4 * h + 1; g < 4 * h + 4; ++g)
        half[h] = _mm256_add_epi16(half[h], _mm256_maddubs_epi16(ones, _mm256_load_si256(&out.v[g])));
    }
    const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(half[0], _mm256_load_si256(&out.f[0])),
                                         _mm256_madd_epi16(half[1], _mm256_load_si256(&out.f[1])));
    _mm256_store_si256(&out.bias, _mm256_slli_epi32(sum, 7));
  } else if constexpr (L.q6 && !L.min16) {
    _mm256_store_si256(&out.pairs, packed::q6_scale_pairs(sub));
  }
  if constexpr (L.min16) _mm256_store_si256(&out.mp, packed::min16_pairs(sub));
}

// Blocks [b0, b0 + nb) of group grp into st.
template <const Layout& L>
void stage_blocks256(const PackedMatrix& w, int64_t grp, int64_t b0, int nb, StagedBlock256* st) {
  const uint8_t* gp = w.data.data() + grp * w.group_bytes;
  // A record's blocks at a time, its header's factors converted once.
  for (int i = 0; i < nb;) {
    const int64_t b = b0 + i;
    const int s0 = (int)(b % L.blocks);
    const int s1 = std::min(L.blocks, s0 + nb - i);
    const uint8_t* rec = gp + (b / L.blocks) * L.record();
    const packed::RecordScales<L> scales(rec);
    for (int s = s0; s < s1; ++s, ++i) stage_block256<L>(rec, s, scales, st[i]);
    if constexpr (kUnsignedQ6<L>) {  // chunks start on records: st[i - 8] is the record's first block
      __m256i sum = _mm256_load_si256(&st[i - 8].bias);
      for (int k = i - 7; k < i; ++k) sum = _mm256_add_epi32(sum, _mm256_load_si256(&st[k].bias));
      _mm256_store_si256(&st[i - 8].bias, sum);
    }
  }
}

// block_dot_maddubs over a staged block: the same products and sums (Q6_K:
// the activations + 128 times q - 32, kUnsignedQ6).
template <const Layout& L, int T>
__attribute__((always_inline)) inline void block_dot_staged(const StagedBlock256& sb, const int8_t* const* xq,
                                                            int64_t b, __m256i* idot) {
#pragma GCC unroll 8
  for (int g0 = 0; g0 < 8; g0 += L.group) {
    __m256i i16[T];
#pragma GCC unroll 8
    for (int g = g0; g < g0 + L.group; ++g) {
      const __m256i v = _mm256_load_si256(&sb.v[g]);
      for (int t = 0; t < T; ++t) {
        int32_t x4;
        std::memcpy(&x4, xq[t] + b * 32 + 4 * g, 4);
        const __m256i xb = _mm256_set1_epi32(x4);
        const __m256i prod = L.is_signed
                                 ? _mm256_maddubs_epi16(v, _mm256_sign_epi8(xb, _mm256_load_si256(&sb.sgn[g])))
                                 : kUnsignedQ6<L> ? _mm256_maddubs_epi16(xb, v)
                                                  : _mm256_maddubs_epi16(v, xb);
        i16[t] = g == g0 ? prod : _mm256_add_epi16(i16[t], prod);
        // As in block_dot_maddubs: keeps each token's sum one running
        // register (GCC otherwise builds an add tree and spills it).
        asm("" : "+x"(i16[t]));
      }
    }
    const __m256i f = L.q6          ? _mm256_load_si256(&sb.f[g0 < 4 ? 0 : 1])
                      : kIntSums<L> ? _mm256_load_si256(&sb.f[0])
                                    : _mm256_set1_epi16(1);
    for (int t = 0; t < T; ++t) {
      const __m256i m = _mm256_madd_epi16(i16[t], f);
      idot[t] = g0 == 0 ? m : _mm256_add_epi32(idot[t], m);
      asm("" : "+x"(idot[t]));
    }
  }
}

// T tokens' sums of 8 rows: kept in acc_io [T, 8] for the next chunk of
// blocks, or after the last one written to the rows of y.
template <int T>
inline void store_tile(const Problem& p, int64_t grp, int64_t t0, const __m256* acc, float* acc_io, bool last) {
  if (!last) {
    for (int t = 0; t < T; ++t) _mm256_store_ps(acc_io + 8 * t, acc[t]);
    return;
  }
  store_rows<T>(p, grp, t0, acc);
}

// A kIntSums record (st: its 8 staged blocks, the first b) for T tokens: the
// blocks' dots, scaled by madd (block_dot_staged), summed in int32, then the
// record's float work once (finish_record).
template <const Layout& L, int T>
inline void record_staged(const StagedBlock256* st, const int8_t* const* xq, int64_t b, const packed::ActStage& as,
                          int64_t tt0, __m256* acc) {
  __m256i isum[T];
  for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
  for (int s = 0; s < 8; ++s) {
    __m256i idot[T];
    block_dot_staged<L, T>(st[s], xq, b + s, idot);
    for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], idot[t]);
  }
  constexpr int64_t S = packed::kActStageToks;
  const int64_t k = b * S + tt0;                // d of the record's first block: the super-block's
  const int32_t* ps = as.ps + b / 2 * S + tt0;  // pairs of block sums, one row per pair
  const __m256 d = _mm256_load_ps((const float*)&st[0].D), neg_dmin = _mm256_load_ps((const float*)&st[0].M);
  for (int t = 0; t < T; ++t) {
    __m256i m = _mm256_madd_epi16(_mm256_set1_epi32(ps[t]), _mm256_load_si256(&st[0].mp));
    for (int i = 1; i < 4; ++i)
      m = _mm256_add_epi32(m, _mm256_madd_epi16(_mm256_set1_epi32(ps[i * S + t]), _mm256_load_si256(&st[i].mp)));
    finish_record(isum[t], m, d, neg_dmin, as.d[k + t], acc[t]);
  }
}

// A kScaledSums record (st: its 8 staged blocks, the first b) for T tokens:
// the blocks' scaled dots summed in int32 (Q6_K: from minus the record's
// bias; Q3_K: each block's offset taken off with the token's half sums), then
// finish_scaled_record once.
template <const Layout& L, int T>
inline void scaled_record_staged(const StagedBlock256* st, const int8_t* const* xq, int64_t b,
                                 const packed::ActStage& as, int64_t tt0, __m256* acc) {
  constexpr int64_t S = packed::kActStageToks;
  __m256i isum[T];
  const __m256i start = kUnsignedQ6<L> ? _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_load_si256(&st[0].bias))
                                       : _mm256_setzero_si256();
  for (int t = 0; t < T; ++t) isum[t] = start;
  for (int s = 0; s < 8; ++s) {
    __m256i idot[T];
    block_dot_staged<L, T>(st[s], xq, b + s, idot);
    if constexpr (!kUnsignedQ6<L>) {
      const __m256i pairs = _mm256_load_si256(&st[s].pairs);
      const int32_t* xh = as.hs + (b + s) * S + tt0;
      for (int t = 0; t < T; ++t) {
        const __m256i corr = _mm256_madd_epi16(_mm256_set1_epi32(xh[t]), pairs);
        idot[t] = _mm256_sub_epi32(idot[t], _mm256_slli_epi32(corr, L.bias_shift));
      }
    }
    for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], idot[t]);
  }
  const __m256 d = _mm256_load_ps((const float*)&st[0].D);
  for (int t = 0; t < T; ++t) finish_scaled_record(isum[t], d, as.d[b * S + tt0 + t], acc[t]);
}

// Tokens [t0, t0 + T) of group grp over the staged blocks [b0, b0 + nb):
// acc_io [T, 8] holds the sums of the blocks before b0 (unless first); after
// the last chunk the rows go to y. as: the token block's factors
// (stage_acts), from its token tt0 = t0 - (first token of the block).
template <const Layout& L, int T>
void tile_staged(const Problem& p, int64_t grp, int64_t t0, const StagedBlock256* st, int64_t b0, int nb,
                 const packed::ActStage& as, int64_t tt0, float* acc_io, bool first, bool last) {
  const PackedMatrix& w = *p.w;
  const QuantizedActs& a = *p.a;
  const int8_t* xq[T];
  for (int t = 0; t < T; ++t)
    xq[t] = kUnsignedQ6<L> ? (const int8_t*)as.xu + (tt0 + t) * packed::xu_row_bytes(w.n_in / 32)
                           : a.q_row(t0 + t);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = first ? _mm256_setzero_ps() : _mm256_load_ps(acc_io + 8 * t);
  if constexpr (kIntSums<L>) {  // chunks start on records (kStageBlocks256: two)
    for (int i = 0; i < nb; i += 8) record_staged<L, T>(st + i, xq, b0 + i, as, tt0, acc);
    store_tile<T>(p, grp, t0, acc, acc_io, last);
    return;
  }
  if constexpr (kScaledSums<L>) {
    for (int i = 0; i < nb; i += 8) scaled_record_staged<L, T>(st + i, xq, b0 + i, as, tt0, acc);
    store_tile<T>(p, grp, t0, acc, acc_io, last);
    return;
  }
  for (int i = 0; i < nb; ++i) {
    const int64_t b = b0 + i;
    const StagedBlock256& sb = st[i];
    // Token t's factors of block b: xd[t], xs[t], xh[t], xqs[t].
    const int64_t k = b * packed::kActStageToks + tt0;
    const float* xd = as.d + k;
    [[maybe_unused]] const float* xs = as.s + k;
    [[maybe_unused]] const int32_t* xh = as.hs + k;
    [[maybe_unused]] const int32_t* xqs = as.qs + k;
    __m256i idot[T];
    block_dot_staged<L, T>(sb, xq, b, idot);
    constexpr bool kIntOffset = L.offset == packed::Offset::kMinus8 || L.offset == packed::Offset::kMinus16;
    if constexpr (kIntOffset) {
      constexpr int shift = L.offset == packed::Offset::kMinus8 ? 3 : 4;
      for (int t = 0; t < T; ++t)
        idot[t] = _mm256_sub_epi32(idot[t], _mm256_slli_epi32(_mm256_set1_epi32(xqs[t]), shift));
    }
    const __m256 D = _mm256_load_ps((const float*)&sb.D);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot[t]), _mm256_mul_ps(D, _mm256_set1_ps(xd[t])), acc[t]);
      if constexpr (kFloatOffset<L>)
        acc[t] = _mm256_fmadd_ps(_mm256_load_ps((const float*)&sb.M), _mm256_set1_ps(xs[t]), acc[t]);
    }
    if constexpr (L.min16) {
      const __m256i mp = _mm256_load_si256(&sb.mp);
      const __m256 M = _mm256_load_ps((const float*)&sb.M);
      for (int t = 0; t < T; ++t) {
        const __m256i m32 = _mm256_madd_epi16(_mm256_set1_epi32(xh[t]), mp);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m32), _mm256_mul_ps(M, _mm256_set1_ps(xd[t])), acc[t]);
      }
    }
  }
  store_tile<T>(p, grp, t0, acc, acc_io, last);
}

// Tokens [tb, te) (kStageMinToks to kTokenBlock) of group g, a chunk of
// staged blocks at a time; the token tiles' sums wait in acc between chunks.
template <const Layout& L>
void run_group_staged(const Problem& p, int64_t g, int64_t tb, int64_t te, const packed::ActStage& as) {
  alignas(32) StagedBlock256 st[kStageBlocks256];
  alignas(32) float acc[kTokenBlock * kPackRows];  // [te - tb, 8]
  const int64_t n_blocks = p.w->n_in / 32;
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kStageBlocks256) {
    const int nb = (int)std::min<int64_t>(kStageBlocks256, n_blocks - b0);
    stage_blocks256<L>(*p.w, g, b0, nb, st);
    ChunkPrefetch<L, kStageBlocks256> next(*p.w, g, b0 + nb, 1, (te - tb) / kTileToks);
    const bool first = b0 == 0, last = b0 + nb == n_blocks;
    int64_t t = tb;
    for (; t + kTileToks <= te; t += kTileToks) {
      next.step();
      tile_staged<L, kTileToks>(p, g, t, st, b0, nb, as, t - tb, acc + (t - tb) * 8, first, last);
    }
    next.rest();
    float* rest = acc + (t - tb) * 8;
    switch (te - t) {
      case 3: tile_staged<L, 3>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 2: tile_staged<L, 2>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      case 1: tile_staged<L, 1>(p, g, t, st, b0, nb, as, t - tb, rest, first, last); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace stride::isa::STRIDE_ISA_NS
#endif
