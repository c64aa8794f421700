#pragma once
// Byte layout of PackedMatrix groups and the AVX2 accessors of the kernel.
//
// A group (8 rows) is a sequence of records; a record covers kBlocks
// 32-element blocks of the 8 rows (1 for the legacy types, 8 = one 256-element
// super-block for K-quants): a header of scales, then one sub-record per
// 32-element block. Within a block, the quant of row r, element k is q[r][k]
// (unsigned, offsets moved into the scales, except Q8_0 which stays signed).
// "Vector g" (g = 0..7) is the 32 bytes holding q[r][4g + i] at byte 4r + i.
//   P plane (128 B): 4 x 32 bytes; byte 32j + 4r + i holds q[r][4j+i] & 15 in
//                    its low nibble and q[r][4j+16+i] & 15 in its high nibble,
//                    so vector g is (P[g & 3] >> (4 * (g >> 2))) & 15.
//   H plane (32 B, Q5): byte 4r + i, bit g = bit 4 of q[r][4g + i].
//   H2 plane (64 B, Q6_K): byte 32(g >> 2) + 4r + i, bits 2(g & 3)..+1 =
//                    bits 4..5 of q[r][4g + i].
//   V plane (256 B, Q8_0): vector g stored as is.
//   Q2 plane (64 B, Q2_K, Q3_K): byte 32(g & 1) + 4r + i, bits 2(g >> 1)..+1 =
//                    bits 0..1 of q[r][4g + i]; with an H plane (Q3_K), that
//                    plane's bit g is bit 2 (above a nibble plane it is bit 4).
//   IQ4_NL, IQ4_XS and MXFP4 store their 4-bit grid indices in the P plane; a pshufb
//   through the type's int8 grid (Lut) turns vector g into signed levels.
// Headers (fp16 values are the GGUF ones, bit for bit; [8] = one per row):
//   Q4_0, Q5_0, Q8_0: d[8] fp16                       x = d*q (+ -8d / -16d)
//   Q4_1, Q5_1:       d[8] fp16, m[8] fp16            x = d*q + m
//   Q4_K, Q5_K:       d[8], dmin[8] fp16, sc[8 blocks][8 rows] u8,
//                     m[8 blocks][8 rows] u8          x = d*sc*q - dmin*m
//   Q6_K:             d[8] fp16; each block's sub-record starts with
//                     scp[8 rows][2] i8 (scale of elements 0-15, 16-31)
//                                                     x = d*sc*(q - 32)
//   Q2_K:             d[8], dmin[8] fp16; each block's sub-record starts with
//                     scp[8 rows][2] i8 (scales, as Q6_K) and
//                     mnp[8 rows][2] i8 (mins of elements 0-15, 16-31)
//                                                     x = d*sc*q - dmin*mn
//   Q3_K:             d[8] fp16; scp[8 rows][2] i8 (sc - 32) as Q6_K
//                                                     x = d*sc*(q - 4)
//   IQ4_XS:           d[8] fp16, ls[8 blocks][8 rows] i8 (6-bit scale - 32)
//                                                     x = d*ls*grid[q]
//   IQ4_NL:           d[8] fp16                       x = d*grid[q]
//   MXFP4:            e[8] u8 (E8M0)                  x = 2^(e-128)*grid[q]
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.h"

namespace stride::packed {

enum class Offset { kNone, kMin, kMinus8, kMinus16, kKQuant };
// The int8 grid that 4-bit indices select (quant_blocks.h), if any.
enum class Lut { kNone, kIq4, kMxfp4 };

// Sizes and the parts present, per type. kGroup: vectors whose maddubs
// results can be summed in int16 without overflow (|x| <= 127):
// 2 * 15 * 127 * 8 = 30480, 2 * 31 * 127 * 4 = 31496, 2 * 63 * 127 * 2 = 32004,
// 2 * 128 * 127 * 1 = 32512; MXFP4's levels: 2 * 12 * 127 * 8 = 24384;
// Q2_K: 2 * 3 * 127 * 4 = 3048 (4: a group must not mix the two scale halves).
struct Layout {
  int blocks;       // 32-element blocks per record
  int header;       // bytes of the record header
  int sub;          // bytes per block sub-record
  int p_off, h_off, h2_off;  // plane offsets in the sub-record; -1: absent
  int group;        // kGroup above
  bool is_signed;   // Q8_0: signed quants, maddubs with the sign trick
  bool q6;          // Q6_K, Q2_K, Q3_K: int16 scales per 16 elements (Q6_K, Q3_K: and an offset)
  Offset offset;
  Lut lut = Lut::kNone;
  int q2_off = -1;     // Q2 plane offset in the sub-record; -1: absent
  bool min16 = false;  // Q2_K: a min per 16 elements (scp as Q6_K, mnp after it)
  int bias_shift = 5;  // q6 without min16: quants carry an offset of 2^bias_shift (32, Q3_K: 4)
  constexpr int record() const { return header + blocks * sub; }
};

constexpr Layout kQ4_0{1, 16, 128, 0, -1, -1, 8, false, false, Offset::kMinus8};
constexpr Layout kQ4_1{1, 32, 128, 0, -1, -1, 8, false, false, Offset::kMin};
constexpr Layout kQ5_0{1, 16, 160, 0, 128, -1, 4, false, false, Offset::kMinus16};
constexpr Layout kQ5_1{1, 32, 160, 0, 128, -1, 4, false, false, Offset::kMin};
constexpr Layout kQ8_0{1, 16, 256, 0, -1, -1, 1, true, false, Offset::kNone};
constexpr Layout kQ4_K{8, 160, 128, 0, -1, -1, 8, false, false, Offset::kKQuant};
constexpr Layout kQ5_K{8, 160, 160, 0, 128, -1, 4, false, false, Offset::kKQuant};
constexpr Layout kQ6_K{8, 16, 208, 16, -1, 144, 2, false, true, Offset::kNone};
constexpr Layout kQ2_K{8, 32, 96, -1, -1, -1, 4, false, true, Offset::kNone, Lut::kNone, 32, true};
constexpr Layout kQ3_K{8, 16, 112, -1, 80, -1, 4, false, true, Offset::kNone, Lut::kNone, 16, false, 2};
constexpr Layout kIQ4_NL{1, 16, 128, 0, -1, -1, 1, true, false, Offset::kNone, Lut::kIq4};
constexpr Layout kIQ4_XS{8, 80, 128, 0, -1, -1, 1, true, false, Offset::kNone, Lut::kIq4};
constexpr Layout kMXFP4{1, 8, 128, 0, -1, -1, 8, true, false, Offset::kNone, Lut::kMxfp4};

static_assert(kQ4_0.record() == 8 * 18 && kQ4_1.record() == 8 * 20);
static_assert(kQ5_0.record() == 8 * 22 && kQ5_1.record() == 8 * 24 && kQ8_0.record() == 8 * 34);
static_assert(kQ4_K.record() == 8 * 148 && kQ5_K.record() == 8 * 180 && kQ6_K.record() == 8 * 210);
static_assert(kQ2_K.record() == 8 * 100 && kQ3_K.record() == 8 * 114);
static_assert(kIQ4_NL.record() == 8 * 18 && kIQ4_XS.record() == 8 * 138 && kMXFP4.record() == 8 * 17);

inline const int8_t* lut_levels(Lut l) { return l == Lut::kIq4 ? quant::kIq4Values : quant::kMxfp4Doubled; }
inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256((const __m256i*)p); }

// Vector g of a block (see the header comment), as unsigned (or Q8_0 signed) bytes.
template <const Layout& L>
inline __m256i vec(const uint8_t* sub, int g) {
  if constexpr (L.lut != Lut::kNone) {
    const __m256i p = load(sub + L.p_off + 32 * (g & 3));
    const __m256i idx = _mm256_and_si256(g < 4 ? p : _mm256_srli_epi16(p, 4), _mm256_set1_epi8(0x0F));
    const __m128i grid = _mm_loadu_si128((const __m128i*)lut_levels(L.lut));
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(grid), idx);
  } else if constexpr (L.is_signed) {
    return load(sub + 32 * g);
  } else if constexpr (L.q2_off >= 0) {
    const __m256i p = load(sub + L.q2_off + 32 * (g & 1));
    __m256i v = _mm256_and_si256(_mm256_srli_epi16(p, 2 * (g >> 1)), _mm256_set1_epi8(3));
    if constexpr (L.h_off >= 0) {  // bit g -> bit 2 (masked first: no bits cross bytes)
      const __m256i h = _mm256_and_si256(load(sub + L.h_off), _mm256_set1_epi8((char)(1 << g)));
      v = _mm256_or_si256(v, g <= 2 ? _mm256_slli_epi16(h, 2 - g) : _mm256_srli_epi16(h, g - 2));
    }
    return v;
  } else {
    const __m256i nib = _mm256_set1_epi8(0x0F);
    const __m256i p = load(sub + L.p_off + 32 * (g & 3));
    __m256i v = g < 4 ? _mm256_and_si256(p, nib) : _mm256_and_si256(_mm256_srli_epi16(p, 4), nib);
    if constexpr (L.h_off >= 0) {  // bit g -> bit 4 (masked first: no bits cross bytes)
      const __m256i h = _mm256_and_si256(load(sub + L.h_off), _mm256_set1_epi8((char)(1 << g)));
      v = _mm256_or_si256(v, g <= 4 ? _mm256_slli_epi16(h, 4 - g) : _mm256_srli_epi16(h, g - 4));
    }
    if constexpr (L.h2_off >= 0) {  // bits 2(g&3)..+1 -> bits 4..5
      const int sh = 2 * (g & 3);
      const __m256i h = _mm256_and_si256(load(sub + L.h2_off + 32 * (g >> 2)),
                                         _mm256_set1_epi8((char)(3 << sh)));
      v = _mm256_or_si256(v, sh <= 4 ? _mm256_slli_epi16(h, 4 - sh) : _mm256_srli_epi16(h, sh - 4));
    }
    return v;
  }
}

// Q6_K: int16 lanes (scale of elements 0-15, scale of 16-31) of each row.
inline __m256i q6_scale_pairs(const uint8_t* sub) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)sub));
}

// Q2_K: int16 lanes (min of elements 0-15, min of 16-31) of each row.
inline __m256i min16_pairs(const uint8_t* sub) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(sub + 16)));
}

// The multiplier of madd for the int16 sums of vectors [g0, g0 + group):
// ones, or for Q6_K the scale of the half the vectors belong to, in both int16s.
template <const Layout& L>
inline __m256i madd_factor(const uint8_t* sub, int g0) {
  if constexpr (L.q6) {
    const __m256i pairs = q6_scale_pairs(sub);
    const __m256i lo = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1,
                                        0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i hi = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2,
                                        3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
    return _mm256_shuffle_epi8(pairs, g0 < 4 ? lo : hi);
  } else {
    return _mm256_set1_epi16(1);
  }
}

// Q4_K, Q5_K: the 6-bit scales of block s of the record rec as int32 per row.
inline __m256i kquant_scales(const uint8_t* rec, int s) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(rec + 32 + 8 * s)));
}

// Q4_K, Q5_K: int16 lanes (min of block 2i, min of block 2i + 1) of each row
// of the record rec: the multiplier of madd (vpdpwssd) for the activations'
// pair of block sums (ActStage::ps).
inline __m256i kquant_min_pairs(const uint8_t* rec, int i) {
  const __m128i lo = _mm_loadl_epi64((const __m128i*)(rec + 96 + 16 * i));
  const __m128i hi = _mm_loadl_epi64((const __m128i*)(rec + 96 + 16 * i + 8));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
}

// The int16 pair (Σq of block b, Σq of block b + 1) of an activation row's block sums qs.
inline int32_t block_sum_pair(const int32_t* qs, int64_t b) {
  return (int32_t)((uint32_t)(uint16_t)(int16_t)qs[b] | ((uint32_t)qs[b + 1] << 16));
}

inline __m256 half8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
inline __m256 u8x8_to_f32(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v)));
}

// 2^(e - 128) per row from 8 E8M0 bytes (subnormal for e < 2), as quant::mxfp4_half_scale.
inline __m256 e8m0_half8(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i is_tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, is_tiny));
}

// The per-row factors of a record, converted once for all its blocks: the
// fp16 d (and dmin, Q2_K's negated) of the header. A K-quant record's 8
// blocks share them; converting them per block cost about a tenth of the
// staging's instructions (docs/performance.md).
template <const Layout& L>
struct RecordScales {
  __m256 d;
  __m256 dmin;  // Q4_K, Q5_K: dmin; Q2_K: -dmin; unused otherwise
  explicit RecordScales(const uint8_t* rec) {
    if constexpr (L.lut == Lut::kMxfp4) {
      d = e8m0_half8(rec);
    } else {
      d = half8(rec);
    }
    if constexpr (L.min16) dmin = _mm256_sub_ps(_mm256_setzero_ps(), half8(rec + 16));
    if constexpr (L.offset == Offset::kKQuant) dmin = half8(rec + 16);
  }
  // Per-row float factors of block s of the record rec: x = D * q + M.
  void block(const uint8_t* rec, int s, __m256& D, __m256& M) const {
    if constexpr (L.min16) {  // M: the factor of the integer min sums
      D = d;
      M = dmin;
    } else if constexpr (L.lut == Lut::kIq4 && L.blocks > 1) {  // IQ4_XS: scale per block
      int64_t v;
      std::memcpy(&v, rec + 16 + 8 * s, 8);
      D = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(v))));
    } else if constexpr (L.offset == Offset::kKQuant) {
      D = _mm256_mul_ps(d, u8x8_to_f32(rec + 32 + 8 * s));
      M = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(dmin, u8x8_to_f32(rec + 96 + 8 * s)));
    } else {
      D = d;
      if constexpr (L.offset == Offset::kMin) M = half8(rec + 16);
      if constexpr (L.offset == Offset::kMinus8) M = _mm256_mul_ps(D, _mm256_set1_ps(-8.0f));
      if constexpr (L.offset == Offset::kMinus16) M = _mm256_mul_ps(D, _mm256_set1_ps(-16.0f));
    }
  }
};

}  // namespace stride::packed
