#pragma once
// How the float matmul reads a weight row, one policy per storage type:
// load8 widens 8 elements into a register (F16C / a shift for bf16), scalar
// reads one for the tails. Widening is exact, so every path's tiles see the
// same f32 weights. Internal to matmul_float*.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/matmul_impl.h"
#include "kernels/packed_matrix.h"

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

// tile(rows, toks, r, t) over rows [wr.r0, wr.r1) x tokens [wr.t0, wr.t1), in
// blocks of 64 tokens: tiles of R rows, then R2, then 1, each over T tokens,
// then 1. rows and toks are std::integral_constant<int, N> (the tile's shape).
template <int R, int R2, int T, typename Tile>
void for_tiles(const WorkRange& wr, Tile&& tile) {
  constexpr int64_t kTokenBlock = 64;
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    int64_t r = wr.r0;
    auto rows_of = [&](auto rows) {
      for (; r + rows.value <= wr.r1; r += rows.value) {
        int64_t t = tb;
        for (; t + T <= te; t += T) tile(rows, std::integral_constant<int, T>{}, r, t);
        for (; t < te; ++t) tile(rows, std::integral_constant<int, 1>{}, r, t);
      }
    };
    rows_of(std::integral_constant<int, R>{});
    if constexpr (R2 > 1 && R2 < R) rows_of(std::integral_constant<int, R2>{});
    rows_of(std::integral_constant<int, 1>{});
  }
}

// Packed weights (FloatMatmul::packed): where row `row`'s elements start; its
// 8 elements from i (a multiple of 8) lie at lane + 8 * i elements.
template <typename L>
const uint8_t* packed_lane(const PackedMatrix& w, int64_t row) {
  return w.data.data() + (row / kPackRows) * w.group_bytes + (row % kPackRows) * 8 * sizeof(typename L::Elem);
}

// for_tiles over packed weights: row tiles of R (a divisor of 8) over the
// whole groups of [wr.r0, wr.r1) (r0 a multiple of 8), so a tile may cover
// the last group's padding rows, whose outputs it must not store.
template <int R, int T, typename Tile>
void for_packed_tiles(const WorkRange& wr, Tile&& tile) {
  static_assert(kPackRows % R == 0);
  constexpr int64_t kTokenBlock = 64;
  const int64_t r_end = (wr.r1 + kPackRows - 1) / kPackRows * kPackRows;
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    for (int64_t r = wr.r0; r < r_end; r += R) {
      int64_t t = tb;
      for (; t + T <= te; t += T) tile(std::integral_constant<int, T>{}, r, t);
      for (; t < te; ++t) tile(std::integral_constant<int, 1>{}, r, t);
    }
  }
}

}  // namespace stride::detail::float_rows
