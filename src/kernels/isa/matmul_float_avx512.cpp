// The float matmul's tiles on the AVX-512 path. A zmm register holds two
// weight rows' 8-element groups side by side against the same 8 activations
// (broadcast to both halves), so each 256-bit half accumulates exactly what
// an AVX2 register does and every output equals the AVX2 path's bit for bit,
// while the 32 registers hold tiles of 8 rows x 6 tokens. matmul_bf16_dot
// (AVX512-BF16, not the default: kernel_paths.h) runs bf16 weights through
// vdpbf16ps against the activations' bf16 terms (f32-accurate, summed in
// another order). A kernel variant of the avx512 target (isa/begin.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/matmul_float_rows.h"
#include "kernels/simd/reduce.h"

#include "kernels/isa/begin.h"
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx512bf16")  // vdpbf16ps (matmul_bf16_dot)
namespace stride::isa::STRIDE_ISA_NS {
namespace {

using detail::WorkRange;
using kernels::FloatMatmul;
namespace rows = detail::float_rows;

// 8 elements at i of rows a (low half) and b (high half), widened to f32.
template <typename L>
__m512 load_pair(const uint8_t* a, const uint8_t* b, int64_t i) {
  using E = typename L::Elem;
  if constexpr (std::is_same_v<E, float>) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps((const float*)a + i)),
                              _mm256_loadu_ps((const float*)b + i), 1);
  } else {
    const __m256i h = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)((const E*)a + i))),
        _mm_loadu_si128((const __m128i*)((const E*)b + i)), 1);
    if constexpr (std::is_same_v<L, rows::F16>) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// Packed weights: 16 elements from e of a group, i.e. elements [i, i + 8) of
// two adjacent rows (FloatMatmul::packed), widened as load_pair does.
template <typename L>
__m512 load_packed_pair(const uint8_t* group, int64_t e) {
  using E = typename L::Elem;
  if constexpr (std::is_same_v<E, float>) return _mm512_loadu_ps((const float*)group + e);
  const __m256i h = _mm256_loadu_si256((const __m256i*)((const E*)group + e));
  if constexpr (std::is_same_v<L, rows::F16>) return _mm512_cvtph_ps(h);
  else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

constexpr int kPrefetchMaxToks = 2;   // tiles this narrow are bound by DRAM
constexpr int kPrefetchAhead = 6144;  // bytes ahead in the group's stream

// Rows [r0, r0 + R) x tokens [t0, t0 + T); rows go in pairs, an odd last row
// pairs with itself (its copy is dropped). Packed: R = 8, one group, whose
// row pairs are one load each and whose padding rows are not stored.
template <typename L, int R, int T, bool Packed>
void tile(const FloatMatmul& p, int64_t r0, int64_t t0) {
  static_assert(!Packed || R == 8);
  constexpr int P = (R + 1) / 2;
  __m512 acc[P][T];
  for (int r = 0; r < P; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const uint8_t* rw[2 * P];
  if constexpr (Packed) rw[0] = rows::packed_lane<L>(*p.packed, r0);
  else
    for (int r = 0; r < 2 * P; ++r) rw[r] = p.w->row(r0 + std::min(r, R - 1));
  const float* xs[T];
  for (int t = 0; t < T; ++t) xs[t] = p.x + (t0 + t) * p.n_in;
  const int64_t n8 = p.n_in / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8) {
    if constexpr (Packed && T <= kPrefetchMaxToks) {
      // Decode streams the group once from DRAM: ask L2 for the bytes
      // kPrefetchAhead on (as the quantized decode tile does).
      const char* ahead = (const char*)rw[0] + 8 * i * (int64_t)sizeof(typename L::Elem) + kPrefetchAhead;
      for (int off = 0; off < 64 * (int)sizeof(typename L::Elem); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T1);
    }
    __m512 wv[P];
    for (int r = 0; r < P; ++r) {
      if constexpr (Packed) wv[r] = load_packed_pair<L>(rw[0], 8 * i + 16 * r);
      else wv[r] = load_pair<L>(rw[2 * r], rw[2 * r + 1], i);
    }
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(xs[t] + i));
      for (int r = 0; r < P; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (Packed && r0 + r >= p.n_out) break;  // the last group's padding
    for (int t = 0; t < T; ++t) {
      const __m512 a = acc[r / 2][t];
      const __m256 half = r % 2 ? _mm512_extractf32x8_ps(a, 1) : _mm512_castps512_ps256(a);
      if constexpr (Packed) p.y[(t0 + t) * p.n_out + r0 + r] = simd::hsum(half);
      else p.y[(t0 + t) * p.n_out + r0 + r] = rows::dot_tail<L>(simd::hsum(half), rw[r], xs[t], n8, p.n_in);
    }
  }
}

template <typename L>
void run_range(const FloatMatmul& p, const WorkRange& wr) {
  if (p.packed) {
    rows::for_packed_tiles<8, 6>(wr, [&](auto tt, int64_t r, int64_t t) {
      tile<L, 8, decltype(tt)::value, true>(p, r, t);
    });
    return;
  }
  rows::for_tiles<8, 2, 6>(wr, [&](auto rr, auto tt, int64_t r, int64_t t) {
    tile<L, decltype(rr)::value, decltype(tt)::value, false>(p, r, t);
  });
}

// vdpbf16ps: lane j of a register adds w[2j] * x[2j] + w[2j+1] * x[2j+1]
// (a product of two bf16 is exact in f32); x is kBf16Terms terms, added
// smallest first.
template <int R, int T>
void dot_tile(const FloatMatmul& p, int64_t r0, int64_t t0) {
  constexpr int K = kernels::kBf16Terms;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const uint16_t* rw[R];
  for (int r = 0; r < R; ++r) rw[r] = (const uint16_t*)p.w->row(r0 + r);
  const uint16_t* xk[T];  // [K, n_in]
  for (int t = 0; t < T; ++t) xk[t] = p.x_bf16 + (t0 + t) * K * p.n_in;
  const int64_t n32 = p.n_in / 32 * 32;
  for (int64_t i = 0; i < n32; i += 32) {
    __m512bh wv[R];
    for (int r = 0; r < R; ++r) wv[r] = (__m512bh)_mm512_loadu_si512(rw[r] + i);
    for (int t = 0; t < T; ++t)
      for (int k = K - 1; k >= 0; --k) {
        const __m512bh xv = (__m512bh)_mm512_loadu_si512(xk[t] + k * p.n_in + i);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], xv);
      }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      const float* xt = p.x + (t0 + t) * p.n_in;
      p.y[(t0 + t) * p.n_out + r0 + r] =
          rows::dot_tail<rows::BF16>(_mm512_reduce_add_ps(acc[r][t]), (const uint8_t*)rw[r], xt, n32, p.n_in);
    }
}

}  // namespace

void matmul_f32(const FloatMatmul& p, const WorkRange& wr, WorkerScratch&) { run_range<rows::F32>(p, wr); }
void matmul_f16(const FloatMatmul& p, const WorkRange& wr, WorkerScratch&) { run_range<rows::F16>(p, wr); }
void matmul_bf16(const FloatMatmul& p, const WorkRange& wr, WorkerScratch&) { run_range<rows::BF16>(p, wr); }

void matmul_bf16_dot(const FloatMatmul& p, const WorkRange& wr, WorkerScratch&) {
  if (p.packed) return run_range<rows::BF16>(p, wr);  // these tiles read row-major weights
  rows::for_tiles<4, 1, 4>(wr, [&](auto rr, auto tt, int64_t r, int64_t t) {
    dot_tile<decltype(rr)::value, decltype(tt)::value>(p, r, t);
  });
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
