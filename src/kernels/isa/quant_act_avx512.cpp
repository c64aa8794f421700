// Activation quantization on the AVX-512 path: four blocks of 32 at a time,
// whose maxima, scales and sums go through shared reduction trees (a
// 128-bit quarter per block), narrowed with saturation straight to int8.
// Scale, inverse scale (IEEE division, as the scalar code), rounding (cvtps
// under the default MXCSR: half to even) and sums are the reference's, so
// the bytes are identical on every path. A kernel variant of the avx512
// target (isa/begin.h).
#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/quant_act_block.h"

#include "kernels/isa/begin.h"
namespace stride::isa::STRIDE_ISA_NS {
namespace {

constexpr int kGroup = 4;  // blocks per step

// Quarter k of the result holds the 4 lanes of a_k folded by op: from four
// 16-lane vectors, four 4-lane partials.
template <typename Op>
__m512i fold4(const __m512i a[4], Op op) {
  const __m512i m01 = op(_mm512_shuffle_i32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_i32x4(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512i m23 = op(_mm512_shuffle_i32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_i32x4(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512i m = op(_mm512_shuffle_i32x4(m01, m23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_i32x4(m01, m23, _MM_SHUFFLE(3, 1, 3, 1)));
  // Within each quarter: every lane gets the quarter's fold.
  const __m512i h = op(m, _mm512_shuffle_epi32(m, (_MM_PERM_ENUM)0x4E));
  return op(h, _mm512_shuffle_epi32(h, (_MM_PERM_ENUM)0xB1));
}

// Max of non-negative floats: their bits order as integers, so an integer max is exact.
__m512i max_i32(__m512i a, __m512i b) { return _mm512_max_epi32(a, b); }
__m512i add_i32(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }

void quantize_group(const float* xb, int8_t* q, QuantizedActs& out, int64_t t, int64_t b) {
  __m512 v[kGroup][2];
  __m512i amax[kGroup];
  for (int k = 0; k < kGroup; ++k) {
    v[k][0] = _mm512_loadu_ps(xb + 32 * k);
    v[k][1] = _mm512_loadu_ps(xb + 32 * k + 16);
    amax[k] = _mm512_castps_si512(_mm512_max_ps(_mm512_abs_ps(v[k][0]), _mm512_abs_ps(v[k][1])));
  }
  const __m512 am = _mm512_castsi512_ps(fold4(amax, max_i32));  // quarter k: block k's max|x|
  const __mmask16 big = _mm512_cmp_ps_mask(am, _mm512_set1_ps(quant_act_detail::kTinyAmax), _CMP_GE_OQ);
  const __m512 d = _mm512_maskz_div_ps(big, am, _mm512_set1_ps(127.0f));   // block_scale
  const __m512 id = _mm512_maskz_div_ps(big, _mm512_set1_ps(127.0f), am);  // block_inv_scale
  __m512i low[kGroup], all[kGroup];
  for (int k = 0; k < kGroup; ++k) {
    const __m512 idk = _mm512_shuffle_f32x4(id, id, k * 0x55);  // quarter k everywhere
    low[k] = _mm512_cvtps_epi32(_mm512_mul_ps(v[k][0], idk));
    const __m512i hi = _mm512_cvtps_epi32(_mm512_mul_ps(v[k][1], idk));
    _mm_storeu_si128((__m128i*)(q + 32 * k), _mm512_cvtsepi32_epi8(low[k]));
    _mm_storeu_si128((__m128i*)(q + 32 * k + 16), _mm512_cvtsepi32_epi8(hi));
    all[k] = _mm512_add_epi32(low[k], hi);
  }
  alignas(64) int32_t lows[16], totals[16];
  alignas(64) float ds[16];
  _mm512_store_si512(lows, fold4(low, add_i32));
  _mm512_store_si512(totals, fold4(all, add_i32));
  _mm512_store_ps(ds, d);
  for (int k = 0; k < kGroup; ++k)
    quant_act_detail::store_block_sums(out, t, b + k, ds[4 * k], totals[4 * k], lows[4 * k]);
}

// One block, for the last n_blocks % 4.
void quantize_block(const float* xb, int8_t* q, QuantizedActs& out, int64_t t, int64_t b) {
  const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
  const float am = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  const __m512 id = _mm512_set1_ps(quant_act_detail::block_inv_scale(am));
  const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));
  const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
  _mm_storeu_si128((__m128i*)q, _mm512_cvtsepi32_epi8(i0));
  _mm_storeu_si128((__m128i*)(q + 16), _mm512_cvtsepi32_epi8(i1));
  const int low = _mm512_reduce_add_epi32(i0);
  quant_act_detail::store_block_sums(out, t, b, quant_act_detail::block_scale(am),
                                     low + _mm512_reduce_add_epi32(i1), low);
}

}  // namespace

void quantize_act_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out) {
  const int64_t n_in = out.n_blocks * kActBlock;
  int8_t* q_all = out.q.data();  // [n_tok, row_blocks, 32]
  for (int64_t t = t_begin; t < t_end; ++t) {
    const float* xt = x + t * n_in;
    int8_t* qt = q_all + t * out.row_blocks * kActBlock;
    int64_t b = 0;
    for (; b + kGroup <= out.n_blocks; b += kGroup)
      quantize_group(xt + b * kActBlock, qt + b * kActBlock, out, t, b);
    for (; b < out.n_blocks; ++b) quantize_block(xt + b * kActBlock, qt + b * kActBlock, out, t, b);
    quant_act_detail::clear_padding(out, t);
  }
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
