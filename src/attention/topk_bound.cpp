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
void bound_rows(const float* const* rows, const float* mn, const float* mx, int dim8, float* out) {
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

}  // namespace

float max_summary_bound(const float* const* rows, int n_rows, const float* mn, const float* mx,
                        int dim) {
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

float max_summary_bound_ref(const float* const* rows, int n_rows, const float* mn,
                            const float* mx, int dim) {
  float best = -INFINITY;
  for (int r = 0; r < n_rows; ++r) best = std::max(best, summary_bound(rows[r], mn, mx, dim));
  return best;
}

}  // namespace stride
