#include "attention/topk_bound.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/simd/reduce.h"
#include "kv/store/page_summary.h"

namespace stride {

namespace {

// Up to four rows share each load of the summary.
template <int R>
inline void bound_rows(const float* const* rows, const float* mn, const float* mx, int dim8, float* out) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int i = 0; i < dim8; i += 8) {
    const __m256 lo = _mm256_loadu_ps(mn + i), hi = _mm256_loadu_ps(mx + i);
    for (int r = 0; r < R; ++r) {
      const __m256 q = _mm256_loadu_ps(rows[r] + i);
      acc[r] = _mm256_add_ps(acc[r], _mm256_max_ps(_mm256_mul_ps(q, lo), _mm256_mul_ps(q, hi)));
    }
  }
  for (int r = 0; r < R; ++r) out[r] = simd::hsum(acc[r]);
}

// The one definition of a page's score: both entry points inline it, so the
// batched scores equal the single ones bit for bit.
inline float bound_one(const float* const* rows, int n_rows, const float* mn, const float* mx, int dim) {
  const int dim8 = dim & ~7;
  float best = -INFINITY;
  float part[4];
  for (int r0 = 0; r0 < n_rows; r0 += 4) {
    const int n = std::min(4, n_rows - r0);
    switch (n) {
      case 4: bound_rows<4>(rows + r0, mn, mx, dim8, part); break;
      case 3: bound_rows<3>(rows + r0, mn, mx, dim8, part); break;
      case 2: bound_rows<2>(rows + r0, mn, mx, dim8, part); break;
      default: bound_rows<1>(rows + r0, mn, mx, dim8, part); break;
    }
    for (int r = 0; r < n; ++r) {
      float s = part[r];
      const float* q = rows[r0 + r];
      for (int i = dim8; i < dim; ++i) s += std::max(q[i] * mn[i], q[i] * mx[i]);
      best = std::max(best, s);
    }
  }
  return best;
}

// Pages ahead of the one scored whose summaries are requested early: the
// page table may send consecutive pages anywhere in the pool.
constexpr int64_t kPrefetchAhead = 4;

}  // namespace

float max_summary_bound(const float* const* rows, int n_rows, const float* mn, const float* mx,
                        int dim) {
  return bound_one(rows, n_rows, mn, mx, dim);
}

namespace {

// The page loop for R rows per kv head (R = 0: any count, through
// bound_one); R in 1..4 is bound_one's single tile, unrolled into the loop.
template <int R>
void bounds_pages(const float* const* rows, int n_rows, const float* sums, const int32_t* ids, int64_t n,
                  int n_kv, int dim, float* out) {
  const int64_t page_floats = (int64_t)n_kv * 2 * dim;  // one page's summaries
  const int64_t page_bytes = page_floats * 4;
  const int dim8 = dim & ~7;
  for (int64_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n && ids[i + kPrefetchAhead] >= 0) {
      const char* ahead = (const char*)(sums + ids[i + kPrefetchAhead] * page_floats);
      for (int64_t b = 0; b < page_bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
      _mm_prefetch(ahead + page_bytes - 1, _MM_HINT_T0);  // the summaries need not start a line
    }
    if (ids[i] < 0) {
      for (int h = 0; h < n_kv; ++h) out[h * n + i] = -INFINITY;
      continue;
    }
    const float* page = sums + ids[i] * page_floats;
    for (int h = 0; h < n_kv; ++h) {
      const float* mn = page + (int64_t)h * 2 * dim;
      const float* mx = mn + dim;
      const float* const* hr = rows + (int64_t)h * n_rows;
      if constexpr (R == 0) {
        out[h * n + i] = bound_one(hr, n_rows, mn, mx, dim);
      } else {
        float part[R];
        bound_rows<R>(hr, mn, mx, dim8, part);
        float best = -INFINITY;
        for (int r = 0; r < R; ++r) {
          float s = part[r];
          for (int c = dim8; c < dim; ++c) s += std::max(hr[r][c] * mn[c], hr[r][c] * mx[c]);
          best = std::max(best, s);
        }
        out[h * n + i] = best;
      }
    }
  }
}

}  // namespace

void max_summary_bounds(const float* const* rows, int n_rows, const float* sums, const int32_t* ids,
                        int64_t n, int n_kv, int dim, float* out) {
  switch (n_rows) {
    case 1: return bounds_pages<1>(rows, n_rows, sums, ids, n, n_kv, dim, out);
    case 2: return bounds_pages<2>(rows, n_rows, sums, ids, n, n_kv, dim, out);
    case 3: return bounds_pages<3>(rows, n_rows, sums, ids, n, n_kv, dim, out);
    case 4: return bounds_pages<4>(rows, n_rows, sums, ids, n, n_kv, dim, out);
    default: return bounds_pages<0>(rows, n_rows, sums, ids, n, n_kv, dim, out);
  }
}

float max_summary_bound_ref(const float* const* rows, int n_rows, const float* mn,
                            const float* mx, int dim) {
  float best = -INFINITY;
  for (int r = 0; r < n_rows; ++r) best = std::max(best, summary_bound(rows[r], mn, mx, dim));
  return best;
}

}  // namespace stride
