#pragma once
// The one vector exp of the project (softmax in ops and attention, SiLU,
// GELU, tanh): a Cephes-style polynomial, about 1-2 ulp over the range.
// Inputs below kExpLo give exactly 0, so masked (-inf) logits vanish; inputs
// above kExpHi saturate.
#include <immintrin.h>

namespace stride::simd {

// 2^-126 and just under 2^127: the range where the exponent trick below is exact.
inline constexpr float kExpHi = 88.0f;
inline constexpr float kExpLo = -87.33654475f;
// log2(e), ln2 in two parts, and the polynomial of exp(r) - 1 - r over r^2,
// highest power first: every vector width reads these, so each gives the
// same bits per lane.
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

inline __m256 exp_ps(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(kExpLo), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLo)), _mm256_set1_ps(kExpHi));
  // exp(x) = 2^n * exp(r), n = round(x / ln2), |r| <= ln2/2.
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // Two-part ln2 so that r is computed without cancellation error.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpPoly[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[k]));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // Scale by 2^n through the exponent bits (n in [-126, 127]).
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, y);
}

}  // namespace stride::simd
