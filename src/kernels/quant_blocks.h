#pragma once
// GGUF (ggml) block layouts of the quantized weight types, byte for byte.
// Each block holds QK elements; a row is a sequence of blocks.
#include <cstdint>
#include <cstring>

namespace stride::quant {

constexpr int kQK = 32;    // legacy block size
constexpr int kQKK = 256;  // K-quant super-block size

#pragma pack(push, 1)
struct BlockQ4_0 {  // x = d * (q - 8)
  uint16_t d;
  uint8_t qs[kQK / 2];  // element j in the low nibble of qs[j], j+16 in the high nibble
};
struct BlockQ4_1 {  // x = d * q + m
  uint16_t d, m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {  // x = d * (q - 16); bit 4 of element j is bit j of qh
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {  // x = d * q + m
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {  // x = d * q
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ4_K {  // 8 sub-blocks of 32: x = d*sc*q - dmin*m (6-bit sc, m)
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {  // as Q4_K with a fifth bit per element in qh
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {  // 16 sub-blocks of 16: x = d * sc * (q - 32), q 6-bit
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
struct BlockQ2_K {  // 16 sub-blocks of 16: x = d*(sc & 15)*q - dmin*(sc >> 4), q 2-bit
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];  // element 32k + l of half h: bits 2k..2k+1 of qs[32h + l]
  uint16_t d, dmin;
};
struct BlockQ3_K {  // 16 sub-blocks of 16: x = d*(sc - 32)*(q - 4*!hbit), sc 6-bit
  uint8_t hmask[kQKK / 8];  // bit 4h + k of hmask[l]: high bit of element 128h + 32k + l
  uint8_t qs[kQKK / 4];     // low 2 bits, as Q2_K
  uint8_t scales[12];       // see q3_k_scale
  uint16_t d;
};
struct BlockIQ4_NL {  // x = d * kIq4Values[nibble], nibbles as Q4_0
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockIQ4_XS {  // 8 sub-blocks of 32: x = d*(ls - 32)*kIq4Values[nibble], ls 6-bit
  uint16_t d;
  uint16_t scales_h;  // bits 2s..2s+1: high bits of ls of sub-block s
  uint8_t scales_l[kQKK / 64];  // nibble s % 2 of byte s / 2: low bits of ls
  uint8_t qs[kQKK / 2];  // 16 bytes per sub-block, nibbles as Q4_0
};
struct BlockMXFP4 {  // OCP microscaling FP4: x = 2^(e - 127) * e2m1(nibble)
  uint8_t e;  // E8M0 shared exponent
  uint8_t qs[kQK / 2];  // nibbles as Q4_0
};
#pragma pack(pop)

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136 && sizeof(BlockMXFP4) == 17);

// The non-linear 4-bit grid of IQ4_NL / IQ4_XS (int8 levels, scaled by d).
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
// The FP4 (E2M1) values of MXFP4 doubled, so that they are integers; the
// block scale is halved to match (mxfp4_half_scale).
inline constexpr int8_t kMxfp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) as a float (half the E8M0 scale), subnormal for e < 2.
inline float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The 6-bit scale (0..63, before the -32 offset) of sub-block i (0..15) of a
// Q3_K block: low 4 bits in the nibbles of bytes 0..7, high 2 bits in bytes 8..11.
inline int q3_k_scale(const uint8_t* scales, int i) {
  const int lo = i < 8 ? scales[i] & 0xF : scales[i - 8] >> 4;
  const int hi = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
  return lo | (hi << 4);
}

// The 6-bit scale of sub-block s (0..7) of an IQ4_XS block.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int s) {
  return ((b.scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | (((b.scales_h >> (2 * s)) & 3) << 4);
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block.
inline void k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace stride::quant
