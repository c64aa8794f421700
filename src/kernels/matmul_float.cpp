// F32 / F16 / BF16 weights: f32 FMA over tiles of R rows x T tokens; half
// weights are widened 8 at a time (F16C / shift) right before use.
#include <immintrin.h>

#include <algorithm>

#include "kernels/matmul_impl.h"

namespace stride::detail {
namespace {

constexpr int64_t kTokenBlock = 64;

struct LoadF32 {
  static __m256 load(const uint8_t* row, int64_t i) {
    return _mm256_loadu_ps((const float*)row + i);
  }
  static float scalar(const uint8_t* row, int64_t i) { return ((const float*)row)[i]; }
};
struct LoadF16 {
  static __m256 load(const uint8_t* row, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*)row + i)));
  }
  static float scalar(const uint8_t* row, int64_t i) {
    return _cvtsh_ss(((const uint16_t*)row)[i]);
  }
};
struct LoadBF16 {
  static __m256 load(const uint8_t* row, int64_t i) {
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

struct Problem {
  const TensorView* w;
  const float* x;  // [n_tok, n_in]
  float* y;        // [n_tok, n_out]
  int64_t n_in, n_out;
};

template <typename L, int R, int T>
void tile(const Problem& p, int64_t r0, int64_t t0) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = p.w->row(r0 + r);
  const float* xs[T];
  for (int t = 0; t < T; ++t) xs[t] = p.x + (t0 + t) * p.n_in;
  const int64_t n8 = p.n_in / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = L::load(rows[r], i);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(xs[t] + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      float s = simd::hsum(acc[r][t]);
      for (int64_t i = n8; i < p.n_in; ++i) s += L::scalar(rows[r], i) * xs[t][i];
      p.y[(t0 + t) * p.n_out + r0 + r] = s;
    }
}

template <typename L>
void run_range(const Problem& p, const WorkRange& wr) {
  constexpr int R = 4, T = 3;
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    int64_t r = wr.r0;
    for (; r + R <= wr.r1; r += R) {
      int64_t t = tb;
      for (; t + T <= te; t += T) tile<L, R, T>(p, r, t);
      for (; t < te; ++t) tile<L, R, 1>(p, r, t);
    }
    for (; r < wr.r1; ++r) {
      int64_t t = tb;
      for (; t + T <= te; t += T) tile<L, 1, T>(p, r, t);
      for (; t < te; ++t) tile<L, 1, 1>(p, r, t);
    }
  }
}

template <typename L>
void run(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool) {
  const Problem p{&w, x, y, w.ne[0], w.rows()};
  pool.run_chunks(work_chunks(p.n_out, n_tok, 4, pool.size()), [&](int ci, int nc) {
    const WorkRange wr = split_work(p.n_out, n_tok, 4, ci, nc);
    if (wr.r0 < wr.r1 && wr.t0 < wr.t1) run_range<L>(p, wr);
  });
}

}  // namespace

void matmul_float(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool) {
  switch (w.type) {
    case DType::F32: return run<LoadF32>(w, x, y, n_tok, pool);
    case DType::F16: return run<LoadF16>(w, x, y, n_tok, pool);
    case DType::BF16: return run<LoadBF16>(w, x, y, n_tok, pool);
    default: return;
  }
}

}  // namespace stride::detail
