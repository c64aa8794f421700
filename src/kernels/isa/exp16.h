#pragma once
// simd::exp_ps on 16 lanes: the same steps and constants (simd/exp.h), so
// the same bits in every lane. For AVX-512 kernel variants: include after
// isa/begin.h.
#include <immintrin.h>

#include "kernels/simd/exp.h"

namespace stride::isa::STRIDE_ISA_NS {

inline __m512 exp16(__m512 x) {
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(simd::kExpLo), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(simd::kExpLo)), _mm512_set1_ps(simd::kExpHi));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(simd::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(simd::kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(simd::kLn2Lo), r);
  __m512 p = _mm512_set1_ps(simd::kExpPoly[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(simd::kExpPoly[k]));
  const __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mov_ps((__mmask16)~underflow, _mm512_mul_ps(p, _mm512_castsi512_ps(e)));
}

}  // namespace stride::isa::STRIDE_ISA_NS
