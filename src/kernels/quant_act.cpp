// Activation quantization: the reference, the AVX2 kernel and the entry
// points, which run the active path's kernel (kernel_paths.h; AVX-512:
// quant_act_avx512.cpp). Every path gives the reference's bytes exactly.
#include "kernels/quant_act.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/quant_act_block.h"

namespace stride {
namespace {

// max|x| over the 32 elements at xb.
float block_amax_avx2(const float* xb) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(xb + 8 * k)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  return _mm_cvtss_f32(m4);
}

// Block b of token t (the 32 elements at xb) with the scale of max|x| = am.
void quantize_block_avx2(const float* xb, float am, QuantizedActs& out, int64_t t, int64_t b) {
  __m256 v[4];
  for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k);
  const float d = quant_act_detail::block_scale(am);
  const __m256 id = _mm256_set1_ps(quant_act_detail::block_inv_scale(am));
  // cvtps rounds half to even under the default MXCSR, as nearbyint does.
  __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[0], id));
  __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[1], id));
  __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v[2], id));
  __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v[3], id));
  __m256i sum = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
  // Pack 32 int32 -> 32 int8; packs interleave 128-bit lanes, undo with a permute.
  __m256i p01 = _mm256_packs_epi32(i0, i1);
  __m256i p23 = _mm256_packs_epi32(i2, i3);
  __m256i p = _mm256_packs_epi16(p01, p23);
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i*)(out.q.data() + (t * out.row_blocks + b) * kActBlock), p);
  // i0, i1 hold elements 0-15: their sum is the low half.
  __m256i lo = _mm256_add_epi32(i0, i1);
  __m128i l4 = _mm_add_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
  l4 = _mm_add_epi32(l4, _mm_shuffle_epi32(l4, 0x4E));
  l4 = _mm_add_epi32(l4, _mm_shuffle_epi32(l4, 0xB1));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  const int total = _mm_cvtsi128_si32(s4), low = _mm_cvtsi128_si32(l4);
  quant_act_detail::store_block_sums(out, t, b, d, total, low);
}

// Rows [t_begin, t_end) with one scale per out.scale_blocks blocks (the max
// is exact in any order, so the bytes are the reference's).
void quantize_superblock_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out) {
  const int64_t n_in = out.n_blocks * kActBlock;
  for (int64_t t = t_begin; t < t_end; ++t) {
    for (int64_t b0 = 0; b0 < out.n_blocks; b0 += out.scale_blocks) {
      const int64_t b1 = std::min(out.n_blocks, b0 + out.scale_blocks);
      float am = 0.0f;
      for (int64_t b = b0; b < b1; ++b) am = std::fmax(am, block_amax_avx2(x + t * n_in + b * kActBlock));
      for (int64_t b = b0; b < b1; ++b) quantize_block_avx2(x + t * n_in + b * kActBlock, am, out, t, b);
    }
    quant_act_detail::clear_padding(out, t);
  }
}

void resize(QuantizedActs& a, int64_t n_tok, int64_t n_in, int64_t scale_blocks) {
  a.n_tok = n_tok;
  a.scale_blocks = scale_blocks;
  a.n_blocks = n_in / kActBlock;
  const int64_t chunks = (a.n_blocks + kActChunkBlocks - 1) / kActChunkBlocks;
  a.row_blocks = act_row_stride(chunks * kActChunkBlocks * kActBlock) / kActBlock;
  a.q.resize((size_t)(n_tok * a.row_blocks * kActBlock));
  a.d.resize((size_t)(n_tok * a.row_blocks));
  a.s.resize((size_t)(n_tok * a.row_blocks));
  a.hs.resize((size_t)(n_tok * a.row_blocks));
  a.qs.resize((size_t)(n_tok * a.row_blocks));
}

}  // namespace

void quant_act_detail::clear_padding(QuantizedActs& a, int64_t t) {
  for (int64_t b = a.n_blocks; b < a.row_blocks; ++b) {
    int8_t* q = a.q.data() + (t * a.row_blocks + b) * kActBlock;
    for (int64_t j = 0; j < kActBlock; ++j) q[j] = 0;
    a.d[(size_t)(t * a.row_blocks + b)] = 0.0f;
    a.s[(size_t)(t * a.row_blocks + b)] = 0.0f;
    a.hs[(size_t)(t * a.row_blocks + b)] = 0;
    a.qs[(size_t)(t * a.row_blocks + b)] = 0;
  }
}

void quantize_acts_ref(const float* x, int64_t n_tok, int64_t n_in, QuantizedActs& out, int64_t scale_blocks) {
  resize(out, n_tok, n_in, scale_blocks);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t b0 = 0; b0 < out.n_blocks; b0 += scale_blocks) {
      const int64_t b1 = std::min(out.n_blocks, b0 + scale_blocks);
      float amax = 0.0f;
      for (int64_t i = b0 * kActBlock; i < b1 * kActBlock; ++i) amax = std::fmax(amax, std::fabs(x[t * n_in + i]));
      const float d = quant_act_detail::block_scale(amax);
      const float id = quant_act_detail::block_inv_scale(amax);
      for (int64_t b = b0; b < b1; ++b) {
        const float* xb = x + t * n_in + b * kActBlock;
        int8_t* q = out.q.data() + (t * out.row_blocks + b) * kActBlock;
        int sum = 0, sum_lo = 0;
        for (int64_t j = 0; j < kActBlock; ++j) {
          q[j] = (int8_t)std::nearbyint(xb[j] * id);
          sum += q[j];
          if (j < kActBlock / 2) sum_lo += q[j];
        }
        quant_act_detail::store_block_sums(out, t, b, d, sum, sum_lo);
      }
    }
    quant_act_detail::clear_padding(out, t);
  }
}

void quantize_acts_prepare(int64_t n_tok, int64_t n_in, QuantizedActs& out, int64_t scale_blocks) {
  resize(out, n_tok, n_in, scale_blocks);
}

void quantize_acts(const float* x, int64_t n_tok, int64_t n_in, QuantizedActs& out, int64_t scale_blocks) {
  resize(out, n_tok, n_in, scale_blocks);
  quantize_acts_rows(x, 0, n_tok, out);
}

void quantize_acts_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out) {
  // Super-block scales: the AVX2 kernel on every path (a small share of the
  // prefill; the tiles are what the coarser scale speeds up).
  if (out.scale_blocks > 1) return quantize_superblock_rows(x, t_begin, t_end, out);
  kernels::active_kernels().quantize_act_rows(x, t_begin, t_end, out);
}

void isa::avx2::quantize_act_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out) {
  const int64_t n_in = out.n_blocks * kActBlock;
  for (int64_t t = t_begin; t < t_end; ++t) {
    for (int64_t b = 0; b < out.n_blocks; ++b) {
      const float* xb = x + t * n_in + b * kActBlock;
      quantize_block_avx2(xb, block_amax_avx2(xb), out, t, b);
    }
    quant_act_detail::clear_padding(out, t);
  }
}

}  // namespace stride
