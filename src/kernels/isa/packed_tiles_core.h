#pragma once
// The packed matmul's tiles that every kernel variant shares (isa/packed_tiles.cpp,
// compiled once per CPU target): one block's integer dots (maddubs; VNNI
// from level 1), the streaming tile that decode runs, and the staging of the
// activations' per-block factors. Include after isa/begin.h. Integer sums
// are exact on every path, so every variant produces identical results.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed_format.h"
#include "kernels/packed_tiles.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

using packed::Layout;

// AVX512-VNNI: vpdpbusd multiplies u8 x s8 and accumulates in int32 in one
// instruction, so there is no int16 stage to flush, and 32 vector registers
// hold the accumulators of 8 tokens; each unpacked weight vector then feeds
// twice as many tokens. With 4+ tokens, pairs of groups take the 512-bit
// tiles of packed_tiles_wide.inc (16 rows per vpdpbusd, weights unpacked
// once per token block). On the maddubs path, token blocks of 4+ tokens take
// the staged tiles of packed_tiles_staged.inc (weights unpacked once per
// group and token block; all layouts but Q8_0); decode keeps the streaming
// tile below.
#if STRIDE_ISA_LEVEL >= 1
constexpr int kTileToks = 8;
constexpr int kVnniMinToks = 4;  // narrower tiles take the maddubs path
#else
constexpr int kTileToks = 4;
#endif
constexpr int64_t kTokenBlock = 64;  // tokens whose int8 activations stay in L2
static_assert(kTokenBlock <= packed::kActStageToks);
constexpr int kPrefetchMaxToks = packed::kStreamMaxToks;   // tiles this narrow are bound by DRAM
constexpr int kPrefetchAhead = packed::kStreamPrefetchAhead;  // bytes ahead in the group's stream

using packed::Problem;

// Q4_K and Q5_K with activations scaled per super-block (act_scale_blocks):
// each block's int32 dot is multiplied by its integer scale, a record's 8
// blocks are summed in int32, and the mins come in as Σ m_j * Σq_j in
// integers, so the float work (d * dx * sum - dmin * dx * mins) runs once per
// record instead of once per block. Exact integers and the same float
// operations make every tile (streaming, staged, 512-bit, AMX) bit-identical.
template <const Layout& L>
constexpr bool kIntSums = L.offset == packed::Offset::kKQuant;
// Q6_K and Q3_K (a scale per 16 weights, an integer offset, one d per row and
// record): a block's dot is already Σ sc * (q - c) * x in int32, so the
// record's 8 blocks are summed in int32 and the float work (d * dx * sum)
// runs once per record. Bounds of the record sum: Q6_K 8 blocks x 32 x
// |sc| <= 128 x |q - 32| <= 32 x |x| <= 127 = 1.33e8; Q3_K (|sc| <= 32,
// |q - 4| <= 4) 4.2e6; both far inside int32 (2.1e9). Intermediate sums taken
// with the activations + 128 (kUnsignedActs) are at most 2.7e8 before their
// bias, and wrap-around adds are exact in any case.
template <const Layout& L>
constexpr bool kScaledSums = L.q6 && !L.min16;

// The weight bytes that a staged tile loop's next staging reads: blocks
// [b, b + kBlocks) of `groups` adjacent groups from grp (past a group's end,
// the next group's first: groups are contiguous). Staging reads a chunk in
// one burst that the hardware prefetcher does not run far enough ahead of, so
// the bytes are prefetched a share per token tile while the current chunk's
// tiles compute (all at once, the same hints left about half the stall; into
// L1 rather than L2 was 1-3% faster: bench_matmul, docs/performance.md).
template <const Layout& L, int kBlocks>
class ChunkPrefetch {
 public:
  // tiles: the token tiles that will call step() before the staging.
  ChunkPrefetch(const PackedMatrix& w, int64_t grp, int64_t b, int groups, int64_t tiles)
      : base_((const char*)w.data.data()), size_((int64_t)w.data.size()), group_bytes_(w.group_bytes),
        groups_(groups) {
    constexpr int64_t kBytes = (kBlocks + L.blocks - 1) / L.blocks * L.record();
    begin_ = grp * w.group_bytes + b / L.blocks * L.record();
    lines_ = (kBytes + 63) / 64;
    per_step_ = (lines_ + std::max<int64_t>(tiles, 1) - 1) / std::max<int64_t>(tiles, 1);
  }
  // One token tile's share.
  void step() {
    const int64_t end = std::min(next_ + per_step_, lines_);
    for (; next_ < end; ++next_)
      for (int i = 0; i < groups_; ++i) {
        const int64_t off = begin_ + i * group_bytes_ + 64 * next_;
        if (off < size_) _mm_prefetch(base_ + off, _MM_HINT_T0);
      }
  }
  // Whatever the tiles left (fewer tokens than tiles).
  void rest() {
    per_step_ = lines_;
    step();
  }

 private:
  const char* base_;
  int64_t size_, group_bytes_;
  int groups_;
  int64_t begin_ = 0, lines_ = 0, per_step_ = 0, next_ = 0;
};

#if STRIDE_ISA_LEVEL >= 1
// idot[t] = per-row Σ q * x over block b (Q6_K: Σ sc * q * x, the -32 not yet
// applied), as the AVX2 path computes it.
template <const Layout& L, int T>
inline void block_dot_vnni(const uint8_t* sub, const int8_t* const* xq, int64_t b, __m256i* idot) {
  __m256i hi[L.q6 ? T : 1];  // Q6_K: sums of vectors 4-7 (elements 16-31), scaled apart
  for (int t = 0; t < T; ++t) idot[t] = _mm256_setzero_si256();
  if constexpr (L.q6)
    for (int t = 0; t < T; ++t) hi[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i v = packed::vec<L>(sub, g);
    __m256i av;
    if constexpr (L.is_signed) av = _mm256_sign_epi8(v, v);  // |v| (-128 -> 128 unsigned)
    for (int t = 0; t < T; ++t) {
      int32_t x4;
      std::memcpy(&x4, xq[t] + b * 32 + 4 * g, 4);
      const __m256i xb = _mm256_set1_epi32(x4);
      if constexpr (L.is_signed) {
        idot[t] = _mm256_dpbusd_epi32(idot[t], av, _mm256_sign_epi8(xb, v));
      } else if constexpr (L.q6) {
        if (g < 4) idot[t] = _mm256_dpbusd_epi32(idot[t], v, xb);
        else hi[t] = _mm256_dpbusd_epi32(hi[t], v, xb);
      } else {
        idot[t] = _mm256_dpbusd_epi32(idot[t], v, xb);
      }
    }
  }
  if constexpr (L.q6) {
    const __m256i pairs = packed::q6_scale_pairs(sub);  // int16 (sc_lo, sc_hi) per row
    const __m256i sc_lo = _mm256_srai_epi32(_mm256_slli_epi32(pairs, 16), 16);
    const __m256i sc_hi = _mm256_srai_epi32(pairs, 16);
    for (int t = 0; t < T; ++t)
      idot[t] = _mm256_add_epi32(_mm256_mullo_epi32(idot[t], sc_lo), _mm256_mullo_epi32(hi[t], sc_hi));
  }
}
#endif

// One block's integer dots for T tokens through maddubs (int16 pairs, then
// madd with the layout's factor).
template <const Layout& L, int T>
__attribute__((always_inline)) inline void block_dot_maddubs(const uint8_t* sub, const int8_t* const* xq, int64_t b,
                                                             __m256i* idot) {
#pragma GCC unroll 8
  for (int g0 = 0; g0 < 8; g0 += L.group) {
    __m256i i16[T];
#pragma GCC unroll 8
    for (int g = g0; g < g0 + L.group; ++g) {
      const __m256i v = packed::vec<L>(sub, g);
      __m256i av;
      if constexpr (L.is_signed) av = _mm256_sign_epi8(v, v);  // |v| (-128 -> 128 unsigned)
      for (int t = 0; t < T; ++t) {
        int32_t x4;
        std::memcpy(&x4, xq[t] + b * 32 + 4 * g, 4);
        const __m256i xb = _mm256_set1_epi32(x4);
        const __m256i prod = L.is_signed ? _mm256_maddubs_epi16(av, _mm256_sign_epi8(xb, v))
                                         : _mm256_maddubs_epi16(v, xb);
        i16[t] = g == g0 ? prod : _mm256_add_epi16(i16[t], prod);
        // Keeps each token's sum a running register: without this GCC
        // reassociates the adds into a tree over all products and spills them.
        asm("" : "+x"(i16[t]));
      }
    }
    const __m256i f = packed::madd_factor<L>(sub, g0);
    for (int t = 0; t < T; ++t) {
      const __m256i m = _mm256_madd_epi16(i16[t], f);
      idot[t] = g0 == 0 ? m : _mm256_add_epi32(idot[t], m);
      asm("" : "+x"(idot[t]));
    }
  }
}

// The float work of a kIntSums record for one token (every tile's, the same
// operations in the same order): acc += d * dx * isum - dmin * dx * mins.
inline void finish_record(__m256i isum, __m256i mins, __m256 d, __m256 neg_dmin, float dx, __m256& acc) {
  const __m256 vdx = _mm256_set1_ps(dx);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, vdx), acc);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(neg_dmin, vdx), acc);
}

// The float work of a kScaledSums record for one token (every tile's, the
// same operations): acc += d * dx * isum.
inline void finish_scaled_record(__m256i isum, __m256 d, float dx, __m256& acc) {
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc);
}

// T tokens' sums of group grp's 8 rows (acc [T]) into y; a padded last
// group writes only its real rows.
template <int T>
inline void store_rows(const Problem& p, int64_t grp, int64_t t0, const __m256* acc) {
  const int64_t n_out = p.w->n_out;
  const int64_t r0 = grp * kPackRows;
  const int64_t n_rows = std::min<int64_t>(kPackRows, n_out - r0);
  for (int t = 0; t < T; ++t) {
    float* dst = p.y + (t0 + t) * n_out + r0;
    if (n_rows == kPackRows) {
      _mm256_storeu_ps(dst, acc[t]);
    } else {
      alignas(32) float tmp[kPackRows];
      _mm256_store_ps(tmp, acc[t]);
      std::memcpy(dst, tmp, sizeof(float) * (size_t)n_rows);
    }
  }
}

// y[t0..t0+T, rows of group grp].
template <const Layout& L, int T>
void tile(const Problem& p, int64_t grp, int64_t t0) {
  const PackedMatrix& w = *p.w;
  const QuantizedActs& a = *p.a;
  const int8_t* xq[T];
  const float* xd[T];
  const float* xs[T];
  const int32_t* xh[T];
  const int32_t* xqs[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = a.q_row(t0 + t);
    xd[t] = a.d_row(t0 + t);
    xs[t] = a.s_row(t0 + t);
    xh[t] = a.hs_row(t0 + t);
    xqs[t] = a.qs_row(t0 + t);
  }
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t n_records = w.n_in / (32 * L.blocks);
  const uint8_t* rec = w.data.data() + grp * w.group_bytes;
  for (int64_t ri = 0; ri < n_records; ++ri, rec += L.record()) {
    const packed::RecordScales<L> scales(rec);
    [[maybe_unused]] __m256i isum[T];  // kIntSums, kScaledSums: Σ over the record's blocks of sc * dot
    for (int s = 0; s < L.blocks; ++s) {
      const int64_t b = ri * L.blocks + s;
      const uint8_t* sub = rec + L.header + s * L.sub;
      if constexpr (T <= kPrefetchMaxToks) {
        // Decode streams every weight byte once from DRAM: ask for the bytes
        // kPrefetchAhead on while this block computes. Into L2 (T1): the core
        // keeps more L2 misses than L1 misses in flight. bench_decode_gemv on
        // an AMX Xeon, against T0 at 2 KiB of the sub-records only: one core
        // streams Q4_K 22% and Q6_K 18% faster (T1 at 3 KiB and 12 KiB were
        // slower than at 6 KiB; the K-quant headers, 14% of a Q4_K record,
        // were left to the hardware prefetcher and cost Q4_K 10%).
        // Each block asks for its share of the record, header included.
        constexpr int kShare = (L.record() + L.blocks - 1) / L.blocks;
        const char* ahead = (const char*)rec + s * kShare + kPrefetchAhead;
        for (int off = 0; off < kShare; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T1);
      }
      __m256i idot[T];
#if STRIDE_ISA_LEVEL >= 1
      // With few tokens each vpdpbusd chain waits on its own latency; the
      // maddubs path keeps more independent work in flight (decode).
      if constexpr (T >= kVnniMinToks) {
        block_dot_vnni<L, T>(sub, xq, b, idot);
      } else
#endif
      {
        block_dot_maddubs<L, T>(sub, xq, b, idot);
      }
      if constexpr (L.q6 && !L.min16) {
        // Σ sc * (q - 32) * x = Σ sc * q * x - 32 * (sc_lo * Σx_lo + sc_hi * Σx_hi).
        const __m256i pairs = packed::q6_scale_pairs(sub);
        for (int t = 0; t < T; ++t) {
          const __m256i corr = _mm256_madd_epi16(_mm256_set1_epi32(xh[t][b]), pairs);
          idot[t] = _mm256_sub_epi32(idot[t], _mm256_slli_epi32(corr, L.bias_shift));
        }
      }
      // A constant offset c (q - 8, q - 16) in integers: Σ (q - c) x = Σ q x - c Σ x,
      // one integer subtract instead of a float FMA with the block's x sum.
      constexpr bool kIntOffset = L.offset == packed::Offset::kMinus8 || L.offset == packed::Offset::kMinus16;
      if constexpr (kIntOffset) {
        constexpr int shift = L.offset == packed::Offset::kMinus8 ? 3 : 4;
        for (int t = 0; t < T; ++t)
          idot[t] = _mm256_sub_epi32(idot[t], _mm256_slli_epi32(_mm256_set1_epi32(xqs[t][b]), shift));
      }
      if constexpr (kScaledSums<L>) {
        for (int t = 0; t < T; ++t) isum[t] = s == 0 ? idot[t] : _mm256_add_epi32(isum[t], idot[t]);
        continue;
      }
      if constexpr (kIntSums<L>) {
        const __m256i sc = packed::kquant_scales(rec, s);
        for (int t = 0; t < T; ++t) {
          const __m256i m = _mm256_mullo_epi32(idot[t], sc);
          isum[t] = s == 0 ? m : _mm256_add_epi32(isum[t], m);
        }
        continue;
      }
      __m256 D, M;
      scales.block(rec, s, D, M);
      for (int t = 0; t < T; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot[t]), _mm256_mul_ps(D, _mm256_set1_ps(xd[t][b])),
                                 acc[t]);
        if constexpr (L.offset != packed::Offset::kNone && !kIntOffset)
          acc[t] = _mm256_fmadd_ps(M, _mm256_set1_ps(xs[t][b]), acc[t]);
      }
      if constexpr (L.min16) {
        // - dmin * (mn_lo * Σx_lo + mn_hi * Σx_hi), the half sums precomputed.
        const __m256i mp = packed::min16_pairs(sub);
        for (int t = 0; t < T; ++t) {
          const __m256i m32 = _mm256_madd_epi16(_mm256_set1_epi32(xh[t][b]), mp);
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m32), _mm256_mul_ps(M, _mm256_set1_ps(xd[t][b])), acc[t]);
        }
      }
    }
    if constexpr (kScaledSums<L>) {
      const int64_t b = ri * L.blocks;
      for (int t = 0; t < T; ++t) finish_scaled_record(isum[t], scales.d, xd[t][b], acc[t]);
    }
    if constexpr (kIntSums<L>) {
      const int64_t b = ri * L.blocks;
      __m256i mins[4];
      for (int i = 0; i < 4; ++i) mins[i] = packed::kquant_min_pairs(rec, i);
      const __m256 neg_dmin = _mm256_sub_ps(_mm256_setzero_ps(), scales.dmin);
      for (int t = 0; t < T; ++t) {
        __m256i m = _mm256_madd_epi16(_mm256_set1_epi32(packed::block_sum_pair(xqs[t], b)), mins[0]);
        for (int i = 1; i < 4; ++i)
          m = _mm256_add_epi32(m, _mm256_madd_epi16(_mm256_set1_epi32(packed::block_sum_pair(xqs[t], b + 2 * i)), mins[i]));
        finish_record(isum[t], m, scales.d, neg_dmin, xd[t][b], acc[t]);
      }
    }
  }
  store_rows<T>(p, grp, t0, acc);
}

// Whether a layout's blocks carry a per-row float factor M (tile's epilogue).
template <const Layout& L>
constexpr bool kFloatOffset = L.offset != packed::Offset::kNone && L.offset != packed::Offset::kMinus8 &&
                              L.offset != packed::Offset::kMinus16;

// The integer offset of layout L's quants (Q4_0: q - 8, Q5_0: q - 16, Q6_K:
// q - 32, Q3_K: q - 4), which the 512-bit tiles take off when they stage the
// weights, so that their dots need no per-token correction.
template <const Layout& L>
constexpr int kQuantOffset = L.offset == packed::Offset::kMinus8    ? 8
                             : L.offset == packed::Offset::kMinus16 ? 16
                             : L.q6 && !L.min16                     ? 1 << L.bias_shift
                                                                    : 0;
// Whether the 512-bit tiles stage layout L's weights as signed integers
// (signed layouts, and those with an integer offset).
template <const Layout& L>
constexpr bool kSignedStaged = L.is_signed || kQuantOffset<L> > 0;
// Whether layout L's staged tiles take the activations + 128 (ActStage::xu):
// vpdpbusd (maddubs on the AVX2 path) then multiplies them with the signed
// staged weights, and the staged block's -128 * Σ q per row starts each sum
// (StagedBlock::bias, StagedBlock256::bias). The AVX2 path does so for Q6_K
// only (isa/packed_tiles_staged.h).
template <const Layout& L>
constexpr bool kUnsignedActs = STRIDE_ISA_LEVEL >= 1 ? kSignedStaged<L> : L.q6 && !L.min16 && L.group < 4;

// The factors of tokens [tb, te) that layout L's tiles read, copied
// block-major into as from its token k0 on (k0 + te - tb <= kActStageToks);
// kTileActs: the int8 activations too (ActStage::xt, the AMX tiles' A operand).
template <const Layout& L, bool kTileActs = false>
void stage_acts(const QuantizedActs& a, int64_t n_blocks, int64_t tb, int64_t te, const packed::ActStage& as,
                int64_t k0 = 0) {
  constexpr int64_t S = packed::kActStageToks;
  for (int64_t t = tb; t < te; ++t) {
    const int64_t k = k0 + t - tb;
    if constexpr (kUnsignedActs<L>) {
      const int8_t* q = a.q_row(t);
      uint8_t* xu = as.xu + k * packed::xu_row_bytes(n_blocks);
      for (int64_t i = 0; i < n_blocks * 32; ++i) xu[i] = (uint8_t)q[i] ^ 0x80u;
    }
    if constexpr (kTileActs) {
      const int8_t* q = a.q_row(t);
      for (int64_t b = 0; b < n_blocks; ++b) std::memcpy(as.xt + (b * S + k) * 32, q + b * 32, 32);
    }
    const float* d = a.d_row(t);
    for (int64_t b = 0; b < n_blocks; ++b) as.d[b * S + k] = d[b];
    if constexpr (kFloatOffset<L> && !kIntSums<L>) {
      const float* s = a.s_row(t);
      for (int64_t b = 0; b < n_blocks; ++b) as.s[b * S + k] = s[b];
    }
    if constexpr (L.q6 && !kUnsignedActs<L>) {  // the offset's or the mins' half sums
      const int32_t* h = a.hs_row(t);
      for (int64_t b = 0; b < n_blocks; ++b) as.hs[b * S + k] = h[b];
    }
    if constexpr (kIntSums<L>) {
      const int32_t* q = a.qs_row(t);
      for (int64_t b = 0; b + 1 < n_blocks; b += 2) as.ps[b / 2 * S + k] = packed::block_sum_pair(q, b);
    }
    if constexpr (!kFloatOffset<L> && L.offset != packed::Offset::kNone && !kUnsignedActs<L>) {
      const int32_t* q = a.qs_row(t);
      for (int64_t b = 0; b < n_blocks; ++b) as.qs[b * S + k] = q[b];
    }
  }
}

}  // namespace
}  // namespace stride::isa::STRIDE_ISA_NS
