// The int8 page log-sum-exp (attention/page_logsumexp_int8.h), a kernel
// variant compiled once per CPU target (stride_isa_variant in CMakeLists.txt).
// One register holds 4 channels of 16 keys (8 under AVX2), so a tile of rows
// reads a page's codes once per 4 channels, and the integer sums are exact:
// every path computes the same logits, ((float)dot * k_scale) * row_scale;
// the exp is the project's vector one (kernels/simd/exp.h, 1-2 ulp).
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

#if STRIDE_ISA_LEVEL >= 1
// Logits of R rows against KB blocks of 16 keys (the whole padded page),
// reduced in registers to each row's top and sum of exp: the codes are read
// once per tile, each query word is broadcast once for all KB blocks, and
// no logit goes through memory. Keys at t >= n (padding) are masked out.
//   qb: R rows of [dim / 4] biased query words (Int8Rows::biased)
template <int R, int KB>
void tile_mass(const int8_t* k, const float* ks, const int32_t* ksum, int dim, const int32_t* qb, const float* rs,
               int n, int n_out, float* top, float* sum) {
  constexpr int padded = 16 * KB;
  const int words = dim / 4;
  __m512i acc[R][KB];
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < KB; ++b) acc[r][b] = _mm512_setzero_si512();
  for (int c = 0; c < words; ++c) {
    __m512i kv[KB];
    for (int b = 0; b < KB; ++b) kv[b] = _mm512_loadu_si512(k + ((int64_t)c * padded + 16 * b) * 4);
    for (int r = 0; r < R; ++r) {
      const __m512i q = _mm512_set1_epi32(qb[(int64_t)r * words + c]);
      for (int b = 0; b < KB; ++b) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], q, kv[b]);
    }
  }
  // dpbusd multiplies unsigned by signed bytes: the query's codes + 128, and
  // 128 * sum(k) comes off here.
  __m512i offset[KB];
  __m512 kscale[KB];
  __mmask16 valid[KB];
  for (int b = 0; b < KB; ++b) {
    offset[b] = _mm512_slli_epi32(_mm512_loadu_si512(ksum + 16 * b), 7);
    kscale[b] = _mm512_loadu_ps(ks + 16 * b);
    const int live = n - 16 * b;
    valid[b] = live >= 16 ? (__mmask16)0xFFFF : live <= 0 ? (__mmask16)0 : (__mmask16)((1u << live) - 1);
  }
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  for (int r = 0; r < R && r < n_out; ++r) {
    __m512 l[KB];
    __m512 m = neg_inf;
    for (int b = 0; b < KB; ++b) {
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][b], offset[b]));
      l[b] = _mm512_mask_blend_ps(valid[b], neg_inf, _mm512_mul_ps(_mm512_mul_ps(dot, kscale[b]), _mm512_set1_ps(rs[r])));
      m = _mm512_max_ps(m, l[b]);
    }
    const float t = _mm512_reduce_max_ps(m);
    const __m512 vt = _mm512_set1_ps(t);
    __m512 e = _mm512_setzero_ps();
    for (int b = 0; b < KB; ++b) e = _mm512_add_ps(e, tiles::exp16(_mm512_sub_ps(l[b], vt)));
    top[r] = t;
    sum[r] = _mm512_reduce_add_ps(e);
  }
}

// tile_mass over the tile's live rows only (a group of 7 query heads costs 7
// rows, not 8), for pages of 16 or 32 padded keys.
template <int KB>
void tile_mass_kb(const int8_t* k, const float* ks, const int32_t* ksum, int dim, const int32_t* qb, const float* rs,
                  int n, int n_out, float* top, float* sum) {
  switch (n_out < 8 ? n_out : 8) {
    case 1: return tile_mass<1, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    case 2: return tile_mass<2, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    case 3: return tile_mass<3, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    case 4: return tile_mass<4, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    case 5: return tile_mass<5, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    case 6: return tile_mass<6, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    case 7: return tile_mass<7, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
    default: return tile_mass<8, KB>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
  }
}
void tile_mass_rows(int kb, const int8_t* k, const float* ks, const int32_t* ksum, int dim, const int32_t* qb,
                    const float* rs, int n, int n_out, float* top, float* sum) {
  if (kb == 2) return tile_mass_kb<2>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
  tile_mass_kb<1>(k, ks, ksum, dim, qb, rs, n, n_out, top, sum);
}

// Logits of R rows against every (padded) key: s[r][t], for pages past 32 keys.
template <int R>
void tile_logits(const int8_t* k, const float* ks, const int32_t* ksum, int padded, int dim, const int32_t* qb,
                 const float* rs, float* s) {
  const int words = dim / 4;
  for (int t = 0; t < padded; t += 16) {
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int c = 0; c < words; ++c) {
      const __m512i kv = _mm512_loadu_si512(k + ((int64_t)c * padded + t) * 4);
      for (int r = 0; r < R; ++r)
        acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(qb[(int64_t)r * words + c]), kv);
    }
    const __m512i offset = _mm512_slli_epi32(_mm512_loadu_si512(ksum + t), 7);
    const __m512 kscale = _mm512_loadu_ps(ks + t);
    for (int r = 0; r < R; ++r) {
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r], offset));
      _mm512_storeu_ps(s + (int64_t)r * padded + t, _mm512_mul_ps(_mm512_mul_ps(dot, kscale), _mm512_set1_ps(rs[r])));
    }
  }
}
#else
int32_t word(const int8_t* q) {
  int32_t w;
  std::memcpy(&w, q, 4);
  return w;
}

// acc += q . k over one 4-channel word of 8 keys: |q| times k with q's sign,
// byte products below 2 * 127 * 127, so maddubs never saturates.
inline __m256i dot_word(__m256i acc, __m256i q, __m256i q_magnitude, __m256i k) {
  const __m256i pairs = _mm256_maddubs_epi16(q_magnitude, _mm256_sign_epi8(k, q));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// Logits of R rows against KB blocks of 8 keys (the whole padded page),
// reduced in registers to each row's top and sum of exp, as the AVX-512 tile
// does: the codes of a block are loaded once per R rows, each query word is
// broadcast once for all KB blocks, and no logit goes through memory. Keys at
// t >= n (padding) are masked out.
//   q: R rows of [dim] codes (Int8Rows::codes)
template <int R, int KB>
void tile_mass(const int8_t* k, const float* ks, int dim, const int8_t* q, const float* rs, int n, float* top,
               float* sum) {
  constexpr int padded = 8 * KB;
  __m256i acc[R][KB];
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < KB; ++b) acc[r][b] = _mm256_setzero_si256();
  for (int c = 0; c < dim / 4; ++c) {
    __m256i kv[KB];
    for (int b = 0; b < KB; ++b) kv[b] = _mm256_loadu_si256((const __m256i*)(k + ((int64_t)c * padded + 8 * b) * 4));
    for (int r = 0; r < R; ++r) {
      const __m256i qv = _mm256_set1_epi32(word(q + (int64_t)r * dim + 4 * c));
      const __m256i magnitude = _mm256_sign_epi8(qv, qv);
      for (int b = 0; b < KB; ++b) acc[r][b] = dot_word(acc[r][b], qv, magnitude, kv[b]);
    }
  }
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 valid[KB];
  for (int b = 0; b < KB; ++b) valid[b] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * b), lane));
  for (int r = 0; r < R; ++r) {
    const __m256 row_scale = _mm256_set1_ps(rs[r]);
    __m256 l[KB];
    __m256 m = neg_inf;
    for (int b = 0; b < KB; ++b) {
      const __m256 dot = _mm256_cvtepi32_ps(acc[r][b]);
      l[b] = _mm256_blendv_ps(neg_inf, _mm256_mul_ps(_mm256_mul_ps(dot, _mm256_loadu_ps(ks + 8 * b)), row_scale),
                              valid[b]);
      m = _mm256_max_ps(m, l[b]);
    }
    const float t = simd::hmax(m);
    const __m256 vt = _mm256_set1_ps(t);
    __m256 e = _mm256_setzero_ps();
    for (int b = 0; b < KB; ++b) e = _mm256_add_ps(e, simd::exp_ps(_mm256_sub_ps(l[b], vt)));
    top[r] = t;
    sum[r] = simd::hsum(e);
  }
}

// tile_mass over every row, R at a time where R x KB accumulators fill half
// the 16 registers (the codes and the query words take the rest), then the
// remainder: a group of 7 query heads costs 7 rows, not 8.
template <int KB>
void mass_rows(const int8_t* k, const float* ks, int dim, const int8_t* q, const float* rs, int n, int n_rows,
               float* top, float* sum) {
  constexpr int R = 8 / KB;
  int r0 = 0;
  for (; r0 + R <= n_rows; r0 += R)
    tile_mass<R, KB>(k, ks, dim, q + (int64_t)r0 * dim, rs + r0, n, top + r0, sum + r0);
  switch (n_rows - r0) {
    case 3: return tile_mass<3, KB>(k, ks, dim, q + (int64_t)r0 * dim, rs + r0, n, top + r0, sum + r0);
    case 2: return tile_mass<2, KB>(k, ks, dim, q + (int64_t)r0 * dim, rs + r0, n, top + r0, sum + r0);
    case 1: return tile_mass<1, KB>(k, ks, dim, q + (int64_t)r0 * dim, rs + r0, n, top + r0, sum + r0);
    default: return;
  }
}

template <int R>
void tile_logits(const int8_t* k, const float* ks, const int32_t* /*ksum*/, int padded, int dim, const int8_t* q,
                 const float* rs, float* s) {
  for (int t = 0; t < padded; t += 8) {
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int c = 0; c < dim / 4; ++c) {
      const __m256i kv = _mm256_loadu_si256((const __m256i*)(k + ((int64_t)c * padded + t) * 4));
      for (int r = 0; r < R; ++r) {
        const __m256i qv = _mm256_set1_epi32(word(q + (int64_t)r * dim + 4 * c));
        acc[r] = dot_word(acc[r], qv, _mm256_sign_epi8(qv, qv), kv);
      }
    }
    const __m256 kscale = _mm256_loadu_ps(ks + t);
    for (int r = 0; r < R; ++r) {
      const __m256 dot = _mm256_cvtepi32_ps(acc[r]);
      _mm256_storeu_ps(s + (int64_t)r * padded + t, _mm256_mul_ps(_mm256_mul_ps(dot, kscale), _mm256_set1_ps(rs[r])));
    }
  }
}
#endif
constexpr int kTile = 8;

}  // namespace

void page_logsumexp_int8(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows, float scale,
                         float* work, float* top, float* sum) {
  const int dim = rows.dim, padded = codes.padded_page(), n = codes.page_size();
  const int8_t* k = codes.codes(page, head);
  const float* ks = codes.scales(page, head);
  const int32_t* ksum = codes.sums(page, head);
  float rs[kTile];
  // Rows are padded to kInt8RowTile, a multiple of the tile: whole tiles only.
  for (int r0 = 0; r0 < rows.n_rows; r0 += kTile) {
    for (int r = 0; r < kTile; ++r) rs[r] = scale * rows.scales[(size_t)(r0 + r)];
    const int n_out = rows.n_rows - r0;
#if STRIDE_ISA_LEVEL >= 1
    const int32_t* qb = rows.biased.data() + (int64_t)r0 * (dim / 4);
    if (padded == 32 || padded == 16) {
      tile_mass_rows(padded / 16, k, ks, ksum, dim, qb, rs, n, n_out, top + r0, sum + r0);
      continue;
    }
    tile_logits<kTile>(k, ks, ksum, padded, dim, qb, rs, work);
#else
    const int8_t* qc = rows.codes.data() + (int64_t)r0 * dim;
    const int live = n_out < kTile ? n_out : kTile;
    if (padded == 32) {
      mass_rows<4>(k, ks, dim, qc, rs, n, live, top + r0, sum + r0);
      continue;
    }
    if (padded == 16) {
      mass_rows<2>(k, ks, dim, qc, rs, n, live, top + r0, sum + r0);
      continue;
    }
    tile_logits<kTile>(k, ks, ksum, padded, dim, qc, rs, work);
#endif
    for (int r = 0; r < kTile && r < n_out; ++r) {
      float* s = work + (int64_t)r * padded;
      top[r0 + r] = tiles::row_max(s, n);
      sum[r0 + r] = tiles::exp_shift_sum(s, top[r0 + r], s, n);
    }
  }
}

}  // namespace stride::isa::STRIDE_ISA_NS

#include "kernels/isa/end.h"
