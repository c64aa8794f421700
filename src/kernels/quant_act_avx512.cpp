// Activation quantization on the AVX-512 path: a block of 32 in two
// registers, narrowed with saturation straight to int8. Scale, rounding
// (cvtps under the default MXCSR: half to even) and sums are those of the
// reference, so the bytes are identical on every path. Only the code after
// the pragma is compiled for AVX-512 (see packed_tiles_avx512.cpp).
#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_paths.h"
#include "kernels/quant_act_block.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")
// GCC 12's 512-bit intrinsics pass undefined merge sources, which
// -W(maybe-)uninitialized reports at -O3 (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace stride::kernels_avx512 {
namespace {

// {Σ i0, Σ i0 + Σ i1} (elements 0-15 and the whole block) through one
// reduction tree; integer sums are exact in any order.
void block_sums(__m512i i0, __m512i i1, int& low, int& total) {
  const __m512i s = _mm512_add_epi32(i0, i1);
  // 128-bit quarters: [i0.q0 + i0.q2, i0.q1 + i0.q3, s.q0 + s.q2, s.q1 + s.q3]
  __m512i c = _mm512_add_epi32(_mm512_shuffle_i32x4(i0, s, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_i32x4(i0, s, _MM_SHUFFLE(3, 2, 3, 2)));
  c = _mm512_add_epi32(c, _mm512_shuffle_i32x4(c, c, _MM_SHUFFLE(2, 3, 0, 1)));
  c = _mm512_add_epi32(c, _mm512_shuffle_epi32(c, (_MM_PERM_ENUM)0x4E));
  c = _mm512_add_epi32(c, _mm512_shuffle_epi32(c, (_MM_PERM_ENUM)0xB1));
  low = _mm_cvtsi128_si32(_mm512_castsi512_si128(c));
  total = _mm_cvtsi128_si32(_mm512_extracti32x4_epi32(c, 2));
}

}  // namespace

void quantize_act_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out) {
  const int64_t n_in = out.n_blocks * kActBlock;
  int8_t* q_all = out.q.data();  // [n_tok, row_blocks, 32]
  for (int64_t t = t_begin; t < t_end; ++t) {
    for (int64_t b = 0; b < out.n_blocks; ++b) {
      const float* xb = x + t * n_in + b * kActBlock;
      const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
      const float am = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
      const float d = quant_act_detail::block_scale(am);
      const __m512 id = _mm512_set1_ps(quant_act_detail::block_inv_scale(am));
      const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));
      const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
      int8_t* q = q_all + (t * out.row_blocks + b) * kActBlock;
      _mm_storeu_si128((__m128i*)q, _mm512_cvtsepi32_epi8(i0));
      _mm_storeu_si128((__m128i*)(q + 16), _mm512_cvtsepi32_epi8(i1));
      int low = 0, total = 0;
      block_sums(i0, i1, low, total);
      quant_act_detail::store_block_sums(out, t, b, d, total, low);
    }
    quant_act_detail::clear_padding(out, t);
  }
}

}  // namespace stride::kernels_avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
