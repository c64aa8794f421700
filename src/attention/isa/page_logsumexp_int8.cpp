// The int8 page log-sum-exp (attention/page_logsumexp_int8.h), a kernel
// variant compiled once per CPU target (stride_isa_variant in CMakeLists.txt).
// One register holds 4 channels of 16 keys (8 under AVX2), so a tile of rows
// reads a page's codes once per 4 channels, and the integer sums are exact:
// every path computes the same logits, ((float)dot * k_scale) * row_scale.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "attention/page_logsumexp_int8.h"
#include "kernels/simd/exp.h"
#include "kernels/simd/loaders.h"
#include "kernels/simd/reduce.h"

#include "kernels/isa/begin.h"
#include "attention/attention_tiles.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

int32_t word(const int8_t* q) {
  int32_t w;
  std::memcpy(&w, q, 4);
  return w;
}

#if STRIDE_ISA_LEVEL >= 1
// Logits of R rows against every (padded) key: s[r][t].
template <int R>
void tile_logits(const int8_t* k, const float* ks, const int32_t* ksum, int padded, int dim, const int8_t* q,
                 const float* rs, float* s) {
  for (int t = 0; t < padded; t += 16) {
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int c = 0; c < dim / 4; ++c) {
      const __m512i kv = _mm512_loadu_si512(k + ((int64_t)c * padded + t) * 4);
      // dpbusd multiplies unsigned by signed bytes: the query's codes + 128
      // (the sign bit flipped), and 128 * sum(k) comes off below.
      for (int r = 0; r < R; ++r)
        acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(word(q + (int64_t)r * dim + 4 * c) ^ (int32_t)0x80808080),
                                     kv);
    }
    const __m512i offset = _mm512_slli_epi32(_mm512_loadu_si512(ksum + t), 7);
    const __m512 kscale = _mm512_loadu_ps(ks + t);
    for (int r = 0; r < R; ++r) {
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r], offset));
      _mm512_storeu_ps(s + (int64_t)r * padded + t, _mm512_mul_ps(_mm512_mul_ps(dot, kscale), _mm512_set1_ps(rs[r])));
    }
  }
}
constexpr int kTile = 8;
#else
template <int R>
void tile_logits(const int8_t* k, const float* ks, const int32_t* /*ksum*/, int padded, int dim, const int8_t* q,
                 const float* rs, float* s) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int t = 0; t < padded; t += 8) {
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int c = 0; c < dim / 4; ++c) {
      const __m256i kv = _mm256_loadu_si256((const __m256i*)(k + ((int64_t)c * padded + t) * 4));
      // |q| times k with q's sign: byte products below 2 * 127 * 127, no saturation.
      for (int r = 0; r < R; ++r) {
        const __m256i qv = _mm256_set1_epi32(word(q + (int64_t)r * dim + 4 * c));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qv, qv), _mm256_sign_epi8(kv, qv));
        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(pairs, ones));
      }
    }
    const __m256 kscale = _mm256_loadu_ps(ks + t);
    for (int r = 0; r < R; ++r) {
      const __m256 dot = _mm256_cvtepi32_ps(acc[r]);
      _mm256_storeu_ps(s + (int64_t)r * padded + t, _mm256_mul_ps(_mm256_mul_ps(dot, kscale), _mm256_set1_ps(rs[r])));
    }
  }
}
constexpr int kTile = 4;
#endif

}  // namespace

void page_logsumexp_int8(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows, float scale,
                         float* work, float* out) {
  const int dim = rows.dim, padded = codes.padded_page(), n = codes.page_size();
  const int8_t* k = codes.codes(page, head);
  const float* ks = codes.scales(page, head);
  const int32_t* ksum = codes.sums(page, head);
  float rs[kTile];
  // Rows are padded to kInt8RowTile, a multiple of the tile: whole tiles only.
  for (int r0 = 0; r0 < rows.n_rows; r0 += kTile) {
    for (int r = 0; r < kTile; ++r) rs[r] = scale * rows.scales[(size_t)(r0 + r)];
    tile_logits<kTile>(k, ks, ksum, padded, dim, rows.codes.data() + (int64_t)r0 * dim, rs, work);
    for (int r = 0; r < kTile && r0 + r < rows.n_rows; ++r) {
      float* s = work + (int64_t)r * padded;
      const float top = tiles::row_max(s, n);
      out[r0 + r] = top + std::log(tiles::exp_shift_sum(s, top, s, n));
    }
  }
}

}  // namespace stride::isa::STRIDE_ISA_NS

#include "kernels/isa/end.h"
