#pragma once
// Row loaders: how a kernel reads 8 consecutive elements of a stored row as
// f32, one policy per storage type, so a kernel is written once and
// instantiated for each. A policy gives
//   Elem          the stored element type
//   kScaled       rows carry a per-row scale the caller applies (int8)
//   load8(p)      p[0..8) widened to f32 in a register
//   at(p, i)      p[i] as f32, for the scalar tails and the references
// Widening is exact for all three, so a row gives the same f32 values
// whichever loader or tile reads it.
#include <immintrin.h>

#include <cstdint>

#include "core/fp16.h"

namespace stride::simd {

struct F32Rows {
  using Elem = float;
  static constexpr bool kScaled = false;
  static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
  static float at(const float* p, int64_t i) { return p[i]; }
};

// f16 rows widened in registers (F16C): no f32 copy of the page is written.
struct F16Rows {
  using Elem = uint16_t;
  static constexpr bool kScaled = false;
  static __m256 load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float at(const uint16_t* p, int64_t i) { return fp16_to_fp32(p[i]); }
};

// Symmetric int8 rows, x ~= q * scale with one scale per row (token).
struct I8Rows {
  using Elem = int8_t;
  static constexpr bool kScaled = true;
  static __m256 load8(const int8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static float at(const int8_t* p, int64_t i) { return (float)p[i]; }
};

// dst[i] = src[i] widened, for i < n; dst: [n] f32. For a row set that many
// tiles will read, one widening pass is cheaper than widening at every load.
inline void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, F16Rows::load8(src + i));
  for (; i < n; ++i) dst[i] = F16Rows::at(src, i);
}

}  // namespace stride::simd
