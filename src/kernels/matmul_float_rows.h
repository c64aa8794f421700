#pragma once
// How the float matmul reads a weight row, one policy per storage type:
// load8 widens 8 elements into a register (F16C / a shift for bf16), scalar
// reads one for the tails. Widening is exact, so every path's tiles see the
// same f32 weights. Internal to matmul_float*.cpp.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace stride::detail::float_rows {

struct F32 {
  using Elem = float;
  static __m256 load8(const uint8_t* row, int64_t i) { return _mm256_loadu_ps((const float*)row + i); }
  static float scalar(const uint8_t* row, int64_t i) { return ((const float*)row)[i]; }
};
struct F16 {
  using Elem = uint16_t;
  static __m256 load8(const uint8_t* row, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*)row + i)));
  }
  static float scalar(const uint8_t* row, int64_t i) { return _cvtsh_ss(((const uint16_t*)row)[i]); }
};
struct BF16 {
  using Elem = uint16_t;
  static __m256 load8(const uint8_t* row, int64_t i) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)((const uint16_t*)row + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static float scalar(const uint8_t* row, int64_t i) {
    const uint32_t bits = (uint32_t)((const uint16_t*)row)[i] << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
  }
};

// One output's tail past the last whole group of 8: s += w[i] * x[i] for
// i in [from, n), fused (std::fma, one instruction with FMA), so that every
// path rounds alike whatever the compiler contracts or vectorizes.
template <typename L>
inline float dot_tail(float s, const uint8_t* row, const float* x, int64_t from, int64_t n) {
  for (int64_t i = from; i < n; ++i) s = std::fma(L::scalar(row, i), x[i], s);
  return s;
}

}  // namespace stride::detail::float_rows
