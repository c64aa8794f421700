#pragma once
// AVX2 decoders of the 2- and 3-bit K-quants (see quant_unpack.h for the
// DecodedChunk contract). Both have a 6-bit scale per 16 elements, so they use
// the int16 scale lanes (kScale16); Q2_K also has a min per 16 (kMin16).
#include "kernels/quant_unpack.h"

namespace stride::quant {

// Sub-block s (32 elements) of a Q2_K / Q3_K super-block: bits 2k..2k+1 of
// the 32 bytes of half h = s / 4, k = s % 4.
inline __m256i low_two_bits(const uint8_t* qs, int s) {
  const __m256i raw = _mm256_loadu_si256((const __m256i*)(qs + 32 * (s / 4)));
  return _mm256_and_si256(_mm256_srli_epi16(raw, 2 * (s % 4)), _mm256_set1_epi8(3));
}

struct DecQ2_K {  // d*(sc & 15)*q - dmin*(sc >> 4), q in [0, 3]
  static constexpr bool kMin = false, kScale16 = true, kSuper = true, kUnsigned = true;
  static constexpr bool kMin16 = true;
  static void decode(const uint8_t* src, int, DecodedChunk& dc) {
    const BlockQ2_K* b = (const BlockQ2_K*)src;
    const float d = h2f(b->d);
    dc.dm = -h2f(b->dmin);
    for (int s = 0; s < 8; ++s) {
      store_q(dc, s, low_two_bits(b->qs, s));
      const uint8_t lo = b->scales[2 * s], hi = b->scales[2 * s + 1];
      dc.d[s] = d;
      _mm256_store_si256((__m256i*)dc.sc[s], int16_halves(lo & 0xF, hi & 0xF));
      dc.mn[s][0] = (int16_t)(lo >> 4);
      dc.mn[s][1] = (int16_t)(hi >> 4);
    }
  }
};

struct DecQ3_K {  // d*(sc - 32)*q, q = low bits - 4 unless the hmask bit is set
  static constexpr bool kMin = false, kScale16 = true, kSuper = true, kUnsigned = false;
  static void decode(const uint8_t* src, int, DecodedChunk& dc) {
    const BlockQ3_K* b = (const BlockQ3_K*)src;
    const float d = h2f(b->d);
    const __m256i hmask = _mm256_loadu_si256((const __m256i*)b->hmask);
    const __m256i one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
    for (int s = 0; s < 8; ++s) {
      // Bit s of hmask[l] belongs to element l of sub-block s.
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, s), one);
      const __m256i q = _mm256_or_si256(low_two_bits(b->qs, s), _mm256_slli_epi16(high, 2));
      store_q(dc, s, _mm256_sub_epi8(q, four));
      dc.d[s] = d;
      _mm256_store_si256((__m256i*)dc.sc[s],
                         int16_halves(q3_k_scale(b->scales, 2 * s) - 32, q3_k_scale(b->scales, 2 * s + 1) - 32));
    }
  }
};

}  // namespace stride::quant
