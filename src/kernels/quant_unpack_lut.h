#pragma once
// AVX2 decoders of the 4-bit types whose nibbles index a table of int8 levels
// (IQ4_NL, IQ4_XS, MXFP4; see quant_unpack.h for the DecodedChunk contract).
// One pshufb maps 32 nibbles to their signed levels.
#include "kernels/quant_unpack.h"

namespace stride::quant {

// 16 packed nibbles (element j low, j + 16 high) -> 32 signed levels.
inline __m256i lookup_nibbles(const uint8_t* qs, const int8_t* table) {
  const __m128i t = _mm_loadu_si128((const __m128i*)table);
  return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), unpack_nibbles(qs));
}

struct DecIQ4_NL {  // d * kIq4Values[q]
  static constexpr bool kMin = false, kScale16 = false, kSuper = false, kUnsigned = false;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockIQ4_NL* b = (const BlockIQ4_NL*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, lookup_nibbles(b[s].qs, kIq4Values));
      dc.d[s] = h2f(b[s].d);
    }
  }
};

struct DecIQ4_XS {  // d * (ls - 32) * kIq4Values[q], ls per 32 elements
  static constexpr bool kMin = false, kScale16 = false, kSuper = true, kUnsigned = false;
  static void decode(const uint8_t* src, int, DecodedChunk& dc) {
    const BlockIQ4_XS* b = (const BlockIQ4_XS*)src;
    const float d = h2f(b->d);
    for (int s = 0; s < 8; ++s) {
      store_q(dc, s, lookup_nibbles(b->qs + 16 * s, kIq4Values));
      dc.d[s] = d * (float)(iq4_xs_scale(*b, s) - 32);
    }
  }
};

struct DecMXFP4 {  // 2^(e - 128) * kMxfp4Doubled[q]
  static constexpr bool kMin = false, kScale16 = false, kSuper = false, kUnsigned = false;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockMXFP4* b = (const BlockMXFP4*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, lookup_nibbles(b[s].qs, kMxfp4Doubled));
      dc.d[s] = mxfp4_half_scale(b[s].e);
    }
  }
};

}  // namespace stride::quant
