// F32 / F16 / BF16 weights: f32 FMA over tiles of R rows x T tokens; half
// weights are widened 8 at a time (F16C / shift) right before use. This file
// holds the AVX2 tiles and the entry point, which splits the work over the
// pool and runs the active path's tiles (kernel_paths.h; AVX-512:
// matmul_float_avx512.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/kernel_entries.h"
#include "kernels/kernel_paths.h"
#include "kernels/matmul_float_rows.h"
#include "kernels/matmul_impl.h"

namespace stride {

namespace isa::avx2 {
namespace {

using kernels::FloatMatmul;
using detail::WorkRange;
// Each output: 8 lanes accumulate i mod 8 in order, then simd::hsum and the
// scalar tail. The AVX-512 tiles keep exactly this order per output. Packed
// weights (kStep 8: whole 8-element groups, no tail) give the same sums.
// rows[r]: where row r0 + r starts; its element i lies at kStep * i.
constexpr int kPrefetchMaxToks = 2;   // tiles this narrow are bound by DRAM
constexpr int kPrefetchAhead = 6144;  // bytes ahead in a packed group's stream
template <typename L, int R, int T, int64_t kStep>
void tile(const FloatMatmul& p, const uint8_t* const* rows, int64_t r0, int64_t t0) {
  constexpr bool kPacked = kStep != 1;
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const float* xs[T];
  for (int t = 0; t < T; ++t) xs[t] = p.x + (t0 + t) * p.n_in;
  const int64_t n8 = p.n_in / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8) {
    if constexpr (kPacked && R == kPackRows && T <= kPrefetchMaxToks) {
      // Decode streams the group once from DRAM: ask L2 for the bytes
      // kPrefetchAhead on (as the quantized decode tile does).
      const char* ahead = (const char*)rows[0] + kStep * i * (int64_t)sizeof(typename L::Elem) + kPrefetchAhead;
      for (int off = 0; off < 64 * (int)sizeof(typename L::Elem); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T1);
    }
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = L::load8(rows[r], kStep * i);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(xs[t] + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (kPacked && r0 + r >= p.n_out) break;  // the last group's padding
    for (int t = 0; t < T; ++t)
      p.y[(t0 + t) * p.n_out + r0 + r] =
          kPacked ? simd::hsum(acc[r][t])
                  : detail::float_rows::dot_tail<L>(simd::hsum(acc[r][t]), rows[r], xs[t], n8, p.n_in);
  }
}

// Rows [r0, r0 + R) of packed weights, from `group` (their group, or its f32 copy).
template <int R>
void group_lanes(const uint8_t* group, int64_t elem_bytes, int64_t r0, const uint8_t* (&rows)[R]) {
  for (int r = 0; r < R; ++r) rows[r] = group + ((r0 + r) % kPackRows) * 8 * elem_bytes;
}

// A worker's widened group (run_packed_staged), reused across calls.
struct StagedGroup {
  std::vector<float> f32;  // [n_in / 8, 8 rows, 8]
};

// Packed F16 / BF16 weights in prefill: each group is widened once per token
// block into an f32 copy (same layout) that the f32 tiles read, instead of
// being widened again for every 3 tokens (on this path the widening costs
// about as much as the FMAs). Widening is exact: the sums do not change.
template <typename L>
void run_packed_staged(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) {
  const PackedMatrix& w = *p.packed;
  std::vector<float>& staged = ws.get<StagedGroup>().f32;
  staged.resize((size_t)(kPackRows * p.n_in));
  constexpr int64_t kTokenBlock = 64;
  const int64_t r_end = (wr.r1 + kPackRows - 1) / kPackRows * kPackRows;
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    for (int64_t g0 = wr.r0; g0 < r_end; g0 += kPackRows) {
      const uint8_t* group = w.data.data() + (g0 / kPackRows) * w.group_bytes;
      for (int64_t e = 0; e < kPackRows * p.n_in; e += 8) _mm256_storeu_ps(staged.data() + e, L::load8(group, e));
      for (int64_t r = g0; r < g0 + kPackRows; r += 4) {
        const uint8_t* rows[4];
        group_lanes((const uint8_t*)staged.data(), 4, r, rows);
        int64_t t = tb;
        for (; t + 3 <= te; t += 3) tile<detail::float_rows::F32, 4, 3, 8>(p, rows, r, t);
        for (; t < te; ++t) tile<detail::float_rows::F32, 4, 1, 8>(p, rows, r, t);
      }
    }
  }
}

template <typename L>
void run_range(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) {
  using Elem = typename L::Elem;
  if (p.packed && wr.t1 - wr.t0 < 3) {  // decode: one tile per group, one pass over its stream
    detail::float_rows::for_packed_tiles<8, 1>(wr, [&](auto, int64_t r, int64_t t) {
      const uint8_t* rows[8];
      group_lanes(p.packed->data.data() + (r / kPackRows) * p.packed->group_bytes, sizeof(Elem), r, rows);
      tile<L, 8, 1, 8>(p, rows, r, t);
    });
    return;
  }
  if (p.packed && !std::is_same_v<Elem, float>) return run_packed_staged<L>(p, wr, ws);
  if (p.packed) {
    detail::float_rows::for_packed_tiles<4, 3>(wr, [&](auto toks, int64_t r, int64_t t) {
      const uint8_t* rows[4];
      group_lanes(p.packed->data.data() + (r / kPackRows) * p.packed->group_bytes, sizeof(Elem), r, rows);
      tile<L, 4, decltype(toks)::value, 8>(p, rows, r, t);
    });
    return;
  }
  detail::float_rows::for_tiles<4, 1, 3>(wr, [&](auto rr, auto toks, int64_t r, int64_t t) {
    constexpr int R = decltype(rr)::value;
    const uint8_t* rows[R];
    for (int k = 0; k < R; ++k) rows[k] = p.w->row(r + k);
    tile<L, R, decltype(toks)::value, 1>(p, rows, r, t);
  });
}

}  // namespace

void matmul_f32(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) {
  run_range<detail::float_rows::F32>(p, wr, ws);
}
void matmul_f16(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) {
  run_range<detail::float_rows::F16>(p, wr, ws);
}
void matmul_bf16(const FloatMatmul& p, const WorkRange& wr, WorkerScratch& ws) {
  run_range<detail::float_rows::BF16>(p, wr, ws);
}

}  // namespace isa::avx2

namespace detail {
namespace {

// bf16 nearest to f (ties to even); f is finite.
uint16_t bf16_round(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

float bf16_value(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// out: [n_tok, kBf16Terms, n_in]: x split into bf16 terms, largest first.
void split_bf16_terms(const float* x, int64_t n_tok, int64_t n_in, std::vector<uint16_t>& out) {
  constexpr int K = kernels::kBf16Terms;
  out.resize((size_t)(n_tok * K * n_in));
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* xt = x + t * n_in;
    uint16_t* terms = out.data() + t * K * n_in;
    for (int64_t i = 0; i < n_in; ++i) {
      float rest = xt[i];
      for (int k = 0; k < K; ++k) {
        terms[k * n_in + i] = bf16_round(rest);
        rest -= bf16_value(terms[k * n_in + i]);  // exact in f32
      }
    }
  }
}

// The caller's activations in the forms the tiles read, reused across calls.
struct CallerActs {
  std::vector<uint16_t> terms;  // [n_tok, kBf16Terms, n_in]
  std::vector<uint16_t> tiles;  // FloatMatmul::x_tiles
};

// One float matmul p (w or packed set) of weight type `type` on the tiles of k.
void run_float(const kernels::KernelTable& k, DType type, kernels::FloatMatmul p, int64_t n_tok, ThreadPool& pool) {
  kernels::FloatRangeFn range = nullptr;
  switch (type) {
    case DType::F32: range = k.matmul_f32; break;
    case DType::F16: range = k.matmul_f16; break;
    case DType::BF16: range = k.matmul_bf16; break;
    default: return;
  }
  CallerActs& acts = pool.scratch(0).get<CallerActs>();
  if (type == DType::BF16 && k.bf16_terms) {
    split_bf16_terms(p.x, n_tok, p.n_in, acts.terms);
    p.x_bf16 = acts.terms.data();
  }
  if (k.x_tiles) {
    const int64_t n_tiles = (n_tok + 15) / 16, n_slices = (p.n_in + 31) / 32;
    acts.tiles.resize((size_t)(n_tiles * kernels::kBf16Terms * n_slices * 16 * 32));
    uint16_t* out = acts.tiles.data();
    const float* x = p.x;
    pool.run_chunks((int)std::max<int64_t>(1, std::min<int64_t>(n_tiles, pool.size())), [&](int ci, int nc) {
      k.prepare_x_tiles(x, n_tok, p.n_in, out, n_tiles * ci / nc, n_tiles * (ci + 1) / nc);
    });
    p.x_tiles = out;
  }
  const int64_t align = p.packed ? std::max<int64_t>(k.row_align, kPackRows) : k.row_align;
  pool.run_chunks(work_chunks(p.n_out, n_tok, align, pool.size()), [&](int ci, int nc, int worker) {
    const WorkRange wr = split_work(p.n_out, n_tok, align, ci, nc);
    if (wr.r0 < wr.r1 && wr.t0 < wr.t1) range(p, wr, pool.scratch(worker));
  });
}

}  // namespace

void matmul_float_on(const kernels::KernelTable& k, const TensorView& w, const float* x, float* y,
                     int64_t n_tok, ThreadPool& pool) {
  run_float(k, w.type, kernels::FloatMatmul{&w, x, nullptr, y, w.ne[0], w.rows()}, n_tok, pool);
}

void matmul_float_packed_on(const kernels::KernelTable& k, const PackedMatrix& w, const float* x, float* y,
                            int64_t n_tok, ThreadPool& pool) {
  kernels::FloatMatmul p{nullptr, x, nullptr, y, w.n_in, w.n_out};
  p.packed = &w;
  run_float(k.bf16_terms ? kernels::kernel_table(CpuPath::Avx512) : k, w.type, p, n_tok, pool);
}

void matmul_float(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool) {
  matmul_float_on(kernels::active_kernels(), w, x, y, n_tok, pool);
}

}  // namespace detail

namespace {
struct AmxWeightStage {
  std::vector<uint16_t> bf16;
};
}  // namespace

uint16_t* kernels::amx_weight_stage(WorkerScratch& ws, int64_t n) {
  std::vector<uint16_t>& stage = ws.get<AmxWeightStage>().bf16;
  if ((int64_t)stage.size() < n) stage.resize((size_t)n);
  return stage.data();
}

}  // namespace stride
