#pragma once
// AVX2 decoders: unpack up to 8 consecutive 32-element sub-blocks of one
// quantized weight row into signed int8 plus per-sub-block float factors.
// The integer kernel then computes, for sub-block s and activation block xs:
//   dot = d[s] * dx * Σ_i sc(i) * q[s][i] * xq[i]  +  m[s] * (dx * Σ_i xq[i])
//         + dm * dx * (mn[s][0] * Σ_{i<16} xq[i] + mn[s][1] * Σ_{i>=16} xq[i])
// where sc(i) is 1 except for the types with a scale per 16 elements (Q6_K,
// Q2_K, Q3_K), and the mn term is Q2_K's min per 16 elements (kMin16).
// kUnsigned decoders keep q in [0, 31] (offsets such as Q4_0's -8 move into
// m[s]), so the kernel can feed q straight to maddubs as its unsigned operand;
// the others produce signed q and need the sign trick.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.h"

namespace stride::quant {

struct DecodedChunk {
  alignas(32) int8_t q[8][32];  // [sub-block, element] signed weights
  alignas(32) float d[8];       // scale of each sub-block
  alignas(32) float m[8];       // offset factor (min) of each sub-block; 0 if unused
  alignas(32) int16_t sc[8][16];  // kScale16: [sub-block, 8 x lo scale, 8 x hi scale]
  alignas(32) int16_t mn[8][2];   // kMin16: [sub-block, min of elements 0-15, of 16-31]
  float dm;                       // kMin16: factor of the mins
};

// Decoders with a min per 16 elements declare kMin16 = true.
template <typename Dec>
constexpr bool kHasMin16 = requires { requires Dec::kMin16; };

// Both 16-element halves of a sub-block: lo in the first 8 int16 lanes, hi in the last 8.
inline __m256i int16_halves(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16((int16_t)hi), _mm_set1_epi16((int16_t)lo));
}

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// 16 packed nibbles -> 32 bytes: low nibbles first, then high nibbles.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128((const __m128i*)qs);
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(raw, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), mask);
  return _mm256_set_m128i(hi, lo);
}

// 32 bits -> 32 bytes, byte j = 0x10 when bit j is set (the Q5 fifth bit).
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  const __m256i shuf = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                          0x0202020202020202, 0x0303030303030303);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), shuf);
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
  bytes = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  return _mm256_and_si256(bytes, _mm256_set1_epi8(0x10));
}

inline void store_q(DecodedChunk& dc, int s, __m256i v) {
  _mm256_store_si256((__m256i*)dc.q[s], v);
}

// Legacy types: one block per sub-block; `n` (1..8) blocks from `src`.
struct DecQ4_0 {  // d * (q - 8) = d * q + (-8 d)
  static constexpr bool kMin = true, kScale16 = false, kSuper = false, kUnsigned = true;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockQ4_0* b = (const BlockQ4_0*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, unpack_nibbles(b[s].qs));
      dc.d[s] = h2f(b[s].d);
      dc.m[s] = -8.0f * dc.d[s];
    }
    for (int s = n; s < 8; ++s) dc.m[s] = 0.0f;
  }
};

struct DecQ4_1 {
  static constexpr bool kMin = true, kScale16 = false, kSuper = false, kUnsigned = true;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockQ4_1* b = (const BlockQ4_1*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, unpack_nibbles(b[s].qs));
      dc.d[s] = h2f(b[s].d);
      dc.m[s] = h2f(b[s].m);
    }
    for (int s = n; s < 8; ++s) dc.m[s] = 0.0f;
  }
};

struct DecQ5_0 {  // d * (q - 16) = d * q + (-16 d)
  static constexpr bool kMin = true, kScale16 = false, kSuper = false, kUnsigned = true;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockQ5_0* b = (const BlockQ5_0*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, _mm256_or_si256(unpack_nibbles(b[s].qs), fifth_bits(b[s].qh)));
      dc.d[s] = h2f(b[s].d);
      dc.m[s] = -16.0f * dc.d[s];
    }
    for (int s = n; s < 8; ++s) dc.m[s] = 0.0f;
  }
};

struct DecQ5_1 {
  static constexpr bool kMin = true, kScale16 = false, kSuper = false, kUnsigned = true;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockQ5_1* b = (const BlockQ5_1*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, _mm256_or_si256(unpack_nibbles(b[s].qs), fifth_bits(b[s].qh)));
      dc.d[s] = h2f(b[s].d);
      dc.m[s] = h2f(b[s].m);
    }
    for (int s = n; s < 8; ++s) dc.m[s] = 0.0f;
  }
};

struct DecQ8_0 {
  static constexpr bool kMin = false, kScale16 = false, kSuper = false, kUnsigned = false;
  static void decode(const uint8_t* src, int n, DecodedChunk& dc) {
    const BlockQ8_0* b = (const BlockQ8_0*)src;
    for (int s = 0; s < n; ++s) {
      store_q(dc, s, _mm256_loadu_si256((const __m256i*)b[s].qs));
      dc.d[s] = h2f(b[s].d);
    }
  }
};

// K-quants: one 256-element super-block = 8 sub-blocks (n is always 8).
struct DecQ4_K {
  static constexpr bool kMin = true, kScale16 = false, kSuper = true, kUnsigned = true;
  static void decode(const uint8_t* src, int, DecodedChunk& dc) {
    const BlockQ4_K* b = (const BlockQ4_K*)src;
    const float d = h2f(b->d), dmin = h2f(b->dmin);
    const __m256i mask = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(b->qs + 32 * c));
      store_q(dc, 2 * c, _mm256_and_si256(raw, mask));
      store_q(dc, 2 * c + 1, _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask));
    }
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k_scale_min(s, b->scales, &sc, &m);
      dc.d[s] = d * (float)sc;
      dc.m[s] = -dmin * (float)m;
    }
  }
};

struct DecQ5_K {
  static constexpr bool kMin = true, kScale16 = false, kSuper = true, kUnsigned = true;
  static void decode(const uint8_t* src, int, DecodedChunk& dc) {
    const BlockQ5_K* b = (const BlockQ5_K*)src;
    const float d = h2f(b->d), dmin = h2f(b->dmin);
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i qh = _mm256_loadu_si256((const __m256i*)b->qh);
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(b->qs + 32 * c));
      // Bit s of qh[l] is the fifth bit of element l of sub-block s.
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
      const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
      store_q(dc, 2 * c, _mm256_or_si256(_mm256_and_si256(raw, mask), _mm256_slli_epi16(h0, 4)));
      store_q(dc, 2 * c + 1, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), mask),
                                            _mm256_slli_epi16(h1, 4)));
    }
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k_scale_min(s, b->scales, &sc, &m);
      dc.d[s] = d * (float)sc;
      dc.m[s] = -dmin * (float)m;
    }
  }
};

struct DecQ6_K {
  static constexpr bool kMin = false, kScale16 = true, kSuper = true, kUnsigned = false;
  static void decode(const uint8_t* src, int, DecodedChunk& dc) {
    const BlockQ6_K* b = (const BlockQ6_K*)src;
    const float d = h2f(b->d);
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i three = _mm256_set1_epi8(3);
    const __m256i off = _mm256_set1_epi8(32);
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = _mm256_loadu_si256((const __m256i*)(b->ql + 64 * half));
      const __m256i l1 = _mm256_loadu_si256((const __m256i*)(b->ql + 64 * half + 32));
      const __m256i qh = _mm256_loadu_si256((const __m256i*)(b->qh + 32 * half));
      const __m256i lo4[4] = {_mm256_and_si256(l0, mask), _mm256_and_si256(l1, mask),
                              _mm256_and_si256(_mm256_srli_epi16(l0, 4), mask),
                              _mm256_and_si256(_mm256_srli_epi16(l1, 4), mask)};
      for (int k = 0; k < 4; ++k) {
        const __m256i hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), three);
        const __m256i q = _mm256_or_si256(lo4[k], _mm256_slli_epi16(hi2, 4));
        const int s = 4 * half + k;
        store_q(dc, s, _mm256_sub_epi8(q, off));
        dc.d[s] = d;
        const int16_t sc_lo = b->scales[8 * half + 2 * k];
        const int16_t sc_hi = b->scales[8 * half + 2 * k + 1];
        _mm256_store_si256((__m256i*)dc.sc[s],
                           _mm256_set_m128i(_mm_set1_epi16(sc_hi), _mm_set1_epi16(sc_lo)));
      }
    }
  }
};

}  // namespace stride::quant
