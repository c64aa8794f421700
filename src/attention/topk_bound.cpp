#include "attention/topk_bound.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/simd/reduce.h"
#include "kv/store/page_summary.h"

namespace stride {

namespace {

// Up to kBoundTile rows share each load of the summary; their sums leave the
// registers four at a time (hsum4).
constexpr int kBoundTile = 8;

// The query rows, once per call, interleaved so that a tile's rows are at
// fixed offsets from one pointer: per channel, max(q * mn, q * mx) is q * mx
// where q >= 0 and q * mn where q < 0, so each row pays one load, one blend
// on q's sign bit and one FMA instead of two products, a max and an add.
//   split: [tiles, dim8 / 8, kBoundTile, 8]
struct TiledRows {
  std::vector<float> split;
  int dim8 = 0;
  TiledRows(const float* const* rows, int n_rows, int dim) : dim8(dim & ~7) {
    const int tiles = (n_rows + kBoundTile - 1) / kBoundTile;
    split.assign((size_t)tiles * kBoundTile * dim8, 0.f);
    for (int r = 0; r < n_rows; ++r)
      for (int i = 0; i < dim8; ++i)
        tile(r / kBoundTile)[((int64_t)(i / 8) * kBoundTile + r % kBoundTile) * 8 + i % 8] = rows[r][i];
  }
  float* tile(int t) { return split.data() + (int64_t)t * kBoundTile * dim8; }
  const float* tile(int t) const { return split.data() + (int64_t)t * kBoundTile * dim8; }
};

template <int R>
inline void bound_rows(const float* split, const float* mn, const float* mx, int dim8, float* out) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int i = 0; i < dim8; i += 8, split += kBoundTile * 8) {
    const __m256 lo = _mm256_loadu_ps(mn + i), hi = _mm256_loadu_ps(mx + i);
    for (int r = 0; r < R; ++r) {
      __m256 q = _mm256_loadu_ps(split + 8 * r);
      __asm__("" : "+x"(q));  // one load, used twice: not folded into the FMA as a second load
      acc[r] = _mm256_fmadd_ps(q, _mm256_blendv_ps(hi, lo, q), acc[r]);
    }
  }
  for (int r = 0; r < R; r += 4) {
    const __m256 a = acc[r], b = acc[std::min(r + 1, R - 1)], c = acc[std::min(r + 2, R - 1)],
                 d = acc[std::min(r + 3, R - 1)];
    alignas(16) float sums[4];
    _mm_store_ps(sums, simd::hsum4(a, b, c, d));
    for (int j = 0; j < 4 && r + j < R; ++j) out[r + j] = sums[j];
  }
}

// The one definition of a page's score: both entry points inline it, so the
// batched scores equal the single ones bit for bit.
inline float bound_one(const float* const* rows, const TiledRows& split, int n_rows, const float* mn,
                       const float* mx, int dim) {
  const int dim8 = split.dim8;
  float best = -INFINITY;
  float part[kBoundTile];
  for (int r0 = 0; r0 < n_rows; r0 += kBoundTile) {
    const int n = std::min(kBoundTile, n_rows - r0);
    const float* tile = split.tile(r0 / kBoundTile);
    switch (n) {
      case 8: bound_rows<8>(tile, mn, mx, dim8, part); break;
      case 7: bound_rows<7>(tile, mn, mx, dim8, part); break;
      case 6: bound_rows<6>(tile, mn, mx, dim8, part); break;
      case 5: bound_rows<5>(tile, mn, mx, dim8, part); break;
      case 4: bound_rows<4>(tile, mn, mx, dim8, part); break;
      case 3: bound_rows<3>(tile, mn, mx, dim8, part); break;
      case 2: bound_rows<2>(tile, mn, mx, dim8, part); break;
      default: bound_rows<1>(tile, mn, mx, dim8, part); break;
    }
    for (int r = 0; r < n; ++r) {
      float s = part[r];
      const float* q = rows[r0 + r];
      for (int i = dim8; i < dim; ++i) s = std::fma(q[i], q[i] < 0.f ? mn[i] : mx[i], s);
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
  return bound_one(rows, TiledRows(rows, n_rows, dim), n_rows, mn, mx, dim);
}

namespace {

// Every page's scores, page by page: one page's summaries of all kv heads
// are contiguous and stream once.
void bounds_pages(const float* const* rows, int n_rows, const float* sums, const int32_t* ids, int64_t n,
                  int n_kv, int dim, float* out, int64_t stride) {
  const int64_t page_floats = (int64_t)n_kv * 2 * dim;  // one page's summaries
  const int64_t page_bytes = page_floats * 4;
  std::vector<TiledRows> split;  // [n_kv]
  split.reserve((size_t)n_kv);
  for (int h = 0; h < n_kv; ++h) split.emplace_back(rows + (int64_t)h * n_rows, n_rows, dim);
  for (int64_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n && ids[i + kPrefetchAhead] >= 0) {
      const char* ahead = (const char*)(sums + ids[i + kPrefetchAhead] * page_floats);
      for (int64_t b = 0; b < page_bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
      _mm_prefetch(ahead + page_bytes - 1, _MM_HINT_T0);  // the summaries need not start a line
    }
    if (ids[i] < 0) {
      for (int h = 0; h < n_kv; ++h) out[h * stride + i] = -INFINITY;
      continue;
    }
    const float* page = sums + ids[i] * page_floats;
    for (int h = 0; h < n_kv; ++h) {
      const float* mn = page + (int64_t)h * 2 * dim;
      out[h * stride + i] = bound_one(rows + (int64_t)h * n_rows, split[(size_t)h], n_rows, mn, mn + dim, dim);
    }
  }
}

}  // namespace

void max_summary_bounds(const float* const* rows, int n_rows, const float* sums, const int32_t* ids,
                        int64_t n, int n_kv, int dim, float* out, int64_t out_stride) {
  bounds_pages(rows, n_rows, sums, ids, n, n_kv, dim, out, out_stride > 0 ? out_stride : n);
}

float max_summary_bound_ref(const float* const* rows, int n_rows, const float* mn,
                            const float* mx, int dim) {
  float best = -INFINITY;
  for (int r = 0; r < n_rows; ++r) best = std::max(best, summary_bound(rows[r], mn, mx, dim));
  return best;
}

}  // namespace stride
