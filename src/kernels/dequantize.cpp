#include "kernels/dequantize.h"

#include <cstring>

#include "core/fp16.h"
#include "kernels/quant_blocks.h"

namespace stride {
namespace {

using namespace quant;

template <typename Block>
const Block* blocks(const void* src) {
  return static_cast<const Block*>(src);
}

void deq_q4_0(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockQ4_0& b = blocks<BlockQ4_0>(src)[i];
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * (float)((b.qs[j] & 0xF) - 8);
      y[j + 16] = d * (float)((b.qs[j] >> 4) - 8);
    }
  }
}

void deq_q4_1(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockQ4_1& b = blocks<BlockQ4_1>(src)[i];
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * (float)(b.qs[j] & 0xF) + m;
      y[j + 16] = d * (float)(b.qs[j] >> 4) + m;
    }
  }
}

// Fifth bits of the 32 elements of a Q5 block: bit j belongs to element j.
uint32_t load_qh(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return h;
}

void deq_q5_0(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockQ5_0& b = blocks<BlockQ5_0>(src)[i];
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_qh(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b.qs[j] & 0xF) | (int)(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
      y[j] = d * (float)(lo - 16);
      y[j + 16] = d * (float)(hi - 16);
    }
  }
}

void deq_q5_1(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockQ5_1& b = blocks<BlockQ5_1>(src)[i];
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    const uint32_t qh = load_qh(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b.qs[j] & 0xF) | (int)(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
      y[j] = d * (float)lo + m;
      y[j + 16] = d * (float)hi + m;
    }
  }
}

void deq_q8_0(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockQ8_0& b = blocks<BlockQ8_0>(src)[i];
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = d * (float)b.qs[j];
  }
}

// Q4_K: 4 chunks of 64 elements; each chunk is 32 bytes of qs, low nibbles
// form sub-block 2c and high nibbles sub-block 2c+1.
void deq_q4_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ4_K& b = blocks<BlockQ4_K>(src)[i];
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    for (int c = 0; c < 4; ++c, q += 32) {
      uint8_t sc0, m0, sc1, m1;
      k_scale_min(2 * c, b.scales, &sc0, &m0);
      k_scale_min(2 * c + 1, b.scales, &sc1, &m1);
      const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
      for (int l = 0; l < 32; ++l) *y++ = d0 * (float)(q[l] & 0xF) - mm0;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (float)(q[l] >> 4) - mm1;
    }
  }
}

// Q5_K: as Q4_K; the fifth bit of element l of sub-block s is bit s of qh[l].
void deq_q5_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ5_K& b = blocks<BlockQ5_K>(src)[i];
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    for (int c = 0; c < 4; ++c, q += 32) {
      uint8_t sc0, m0, sc1, m1;
      k_scale_min(2 * c, b.scales, &sc0, &m0);
      k_scale_min(2 * c + 1, b.scales, &sc1, &m1);
      const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
      const int bit0 = 2 * c, bit1 = 2 * c + 1;
      for (int l = 0; l < 32; ++l)
        *y++ = d0 * (float)((q[l] & 0xF) + (((b.qh[l] >> bit0) & 1) << 4)) - mm0;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * (float)((q[l] >> 4) + (((b.qh[l] >> bit1) & 1) << 4)) - mm1;
    }
  }
}

// Q6_K: 2 halves of 128 elements; in each half, element l + 32k (k = 0..3)
// takes its low 4 bits from ql and bits 2k..2k+1 of qh[l] as bits 4..5.
void deq_q6_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ6_K& b = blocks<BlockQ6_K>(src)[i];
    const float d = fp16_to_fp32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * (float)sc[is + 0] * (float)q1;
        y[l + 32] = d * (float)sc[is + 2] * (float)q2;
        y[l + 64] = d * (float)sc[is + 4] * (float)q3;
        y[l + 96] = d * (float)sc[is + 6] * (float)q4;
      }
    }
  }
}

// Q2_K: element 128h + 32k + l is bits 2k..2k+1 of qs[32h + l]; its scale
// byte is the one of its 16-element sub-block.
void deq_q2_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const BlockQ2_K& b = blocks<BlockQ2_K>(src)[i];
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t sc = b.scales[e / 16];
      const int q = (b.qs[32 * h + l] >> (2 * k)) & 3;
      y[e] = d * (float)(sc & 0xF) * (float)q - dmin * (float)(sc >> 4);
    }
  }
}

// Q3_K: low 2 bits as Q2_K; a clear hmask bit subtracts 4.
void deq_q3_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const BlockQ3_K& b = blocks<BlockQ3_K>(src)[i];
    const float d = fp16_to_fp32(b.d);
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int lo = (b.qs[32 * h + l] >> (2 * k)) & 3;
      const int high = (b.hmask[l] >> (4 * h + k)) & 1;
      const int sc = q3_k_scale(b.scales, e / 16) - 32;
      y[e] = d * (float)sc * (float)(lo - (high ? 0 : 4));
    }
  }
}

// A 32-element block of nibbles (element j low, j + 16 high) through a table.
void deq_table_block(const uint8_t* qs, const int8_t* table, float d, float* y) {
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * (float)table[qs[j] & 0xF];
    y[j + 16] = d * (float)table[qs[j] >> 4];
  }
}

void deq_iq4_nl(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockIQ4_NL& b = blocks<BlockIQ4_NL>(src)[i];
    deq_table_block(b.qs, kIq4Values, fp16_to_fp32(b.d), y);
  }
}

void deq_iq4_xs(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const BlockIQ4_XS& b = blocks<BlockIQ4_XS>(src)[i];
    const float d = fp16_to_fp32(b.d);
    for (int s = 0; s < 8; ++s, y += kQK)
      deq_table_block(b.qs + 16 * s, kIq4Values, d * (float)(iq4_xs_scale(b, s) - 32), y);
  }
}

void deq_mxfp4(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const BlockMXFP4& b = blocks<BlockMXFP4>(src)[i];
    deq_table_block(b.qs, kMxfp4Doubled, mxfp4_half_scale(b.e), y);
  }
}

}  // namespace

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const DTypeInfo* info = dtype_info(type);
  if (!info || !info->supported || n <= 0 || n % info->block_elems != 0) return;
  const int64_t nb = n / info->block_elems;
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, (size_t)n * sizeof(float));
      return;
    case DType::F16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case DType::BF16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case DType::Q4_0: deq_q4_0(src, dst, nb); return;
    case DType::Q4_1: deq_q4_1(src, dst, nb); return;
    case DType::Q5_0: deq_q5_0(src, dst, nb); return;
    case DType::Q5_1: deq_q5_1(src, dst, nb); return;
    case DType::Q8_0: deq_q8_0(src, dst, nb); return;
    case DType::Q4_K: deq_q4_k(src, dst, nb); return;
    case DType::Q5_K: deq_q5_k(src, dst, nb); return;
    case DType::Q6_K: deq_q6_k(src, dst, nb); return;
    case DType::Q2_K: deq_q2_k(src, dst, nb); return;
    case DType::Q3_K: deq_q3_k(src, dst, nb); return;
    case DType::IQ4_NL: deq_iq4_nl(src, dst, nb); return;
    case DType::IQ4_XS: deq_iq4_xs(src, dst, nb); return;
    case DType::MXFP4: deq_mxfp4(src, dst, nb); return;
    default: return;
  }
}

void dequantize_tensor_row(const TensorView& t, int64_t r, float* dst) {
  dequantize_row(t.type, t.row(r), dst, t.ne[0]);
}

}  // namespace stride
