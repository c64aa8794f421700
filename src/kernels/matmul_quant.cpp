// Quantized-weight matmul: activations are quantized to int8 once per call,
// weights are unpacked to int8 one 256-element chunk at a time and reused for
// a tile of tokens, and products are summed with maddubs/madd.
#include <immintrin.h>

#include <algorithm>

#include "kernels/quant_unpack.h"
#include "kernels/quant_unpack_low_k.h"
#include "kernels/quant_unpack_lut.h"
#include "kernels/matmul_impl.h"
#include "kernels/quant_act.h"

namespace stride::detail {
namespace {

using quant::DecodedChunk;

constexpr int64_t kTokenBlock = 64;  // tokens whose int8 activations stay in L2
// Tile sizes (rows x tokens): 12 accumulators plus operands fit the 16 ymm
// registers; 3x4 measured best among 2x4, 4x2, 3x4, 4x3 on Zen.
constexpr int kPrefillRows = 3, kPrefillToks = 4;
constexpr int kDecodeRows = 4;

struct Problem {
  const TensorView* w;
  const QuantizedActs* a;
  float* y;          // [n_tok, n_out]
  int64_t n_out;
  int64_t n_chunks;  // 256-element chunks per row (the last may be partial)
  int64_t chunk_bytes;
  int64_t row_stride;  // bytes per weight row (hoisted out of the tile loop)
};

// acc[r][t] += Σ over the sub-blocks of one decoded chunk.
template <typename Dec, int R, int T>
inline void accumulate_chunk(const DecodedChunk* dec, int nsub, const QuantizedActs& a,
                             int64_t t0, int64_t blk0, __m256 (&acc)[R][T]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int s = 0; s < nsub; ++s) {
    __m256 wd[R];
    for (int r = 0; r < R; ++r) wd[r] = _mm256_set1_ps(dec[r].d[s]);
    for (int t = 0; t < T; ++t) {
      const int64_t bi = blk0 + s;
      const __m256i xv = _mm256_loadu_si256((const __m256i*)(a.q_row(t0 + t) + bi * kActBlock));
      const __m256 dx = _mm256_set1_ps(a.d_row(t0 + t)[bi]);
      __m256i ax;
      if constexpr (!Dec::kUnsigned) ax = _mm256_sign_epi8(xv, xv);
      for (int r = 0; r < R; ++r) {
        const __m256i wq = _mm256_load_si256((const __m256i*)dec[r].q[s]);
        // maddubs wants an unsigned first operand: use q directly when it is
        // unsigned, else move the sign of q * x onto x's magnitude.
        __m256i p16;
        if constexpr (Dec::kUnsigned) {
          p16 = _mm256_maddubs_epi16(wq, xv);
        } else {
          p16 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(wq, xv));
        }
        __m256i p32;
        if constexpr (Dec::kScale16) {
          p32 = _mm256_madd_epi16(p16, _mm256_load_si256((const __m256i*)dec[r].sc[s]));
        } else {
          p32 = _mm256_madd_epi16(p16, ones);
        }
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), _mm256_mul_ps(wd[r], dx), acc[r][t]);
      }
    }
  }
  if constexpr (quant::kHasMin16<Dec>) {
    // Mins per 16 elements: the activations' half sums (int16 pairs, one per
    // block) times the (lo, hi) min pairs, all 8 sub-blocks in one madd.
    for (int r = 0; r < R; ++r) {
      const __m256i mn = _mm256_loadu_si256((const __m256i*)dec[r].mn);
      const __m256 dm = _mm256_set1_ps(dec[r].dm);
      for (int t = 0; t < T; ++t) {
        const __m256i hs = _mm256_loadu_si256((const __m256i*)(a.hs_row(t0 + t) + blk0));
        const __m256 dx = _mm256_loadu_ps(a.d_row(t0 + t) + blk0);
        const __m256 m = _mm256_cvtepi32_ps(_mm256_madd_epi16(hs, mn));
        acc[r][t] = _mm256_fmadd_ps(m, _mm256_mul_ps(dm, dx), acc[r][t]);
      }
    }
  }
  if constexpr (Dec::kMin) {
    // Offsets: m[s] * (dx * Σ xq) for all 8 sub-blocks at once (padding is zero).
    for (int r = 0; r < R; ++r) {
      const __m256 m = _mm256_load_ps(dec[r].m);
      for (int t = 0; t < T; ++t)
        acc[r][t] = _mm256_fmadd_ps(m, _mm256_loadu_ps(a.s_row(t0 + t) + blk0), acc[r][t]);
    }
  }
}

// y[t0..t0+T, r0..r0+R] for one tile.
template <typename Dec, int R, int T>
void tile(const Problem& p, int64_t r0, int64_t t0) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  DecodedChunk dec[R];
  const int64_t n_blocks = p.a->n_blocks;
  for (int64_t c = 0; c < p.n_chunks; ++c) {
    const int64_t blk0 = c * kActChunkBlocks;
    const int nsub = (int)std::min<int64_t>(kActChunkBlocks, n_blocks - blk0);
    for (int r = 0; r < R; ++r)
      Dec::decode(p.w->data + (r0 + r) * p.row_stride + c * p.chunk_bytes, nsub, dec[r]);
    accumulate_chunk<Dec, R, T>(dec, nsub, *p.a, t0, blk0, acc);
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) p.y[(t0 + t) * p.n_out + r0 + r] = simd::hsum(acc[r][t]);
}

// Rows [r0, r1) x tokens [t0, t1): token blocks outermost so their int8
// activations stay cached while the thread's weight rows stream past.
template <typename Dec>
void run_range(const Problem& p, const WorkRange& wr) {
  constexpr int R = kPrefillRows, T = kPrefillToks;
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    int64_t r = wr.r0;
    if (te - tb == 1) {  // decode: one token, wider row tiles
      for (; r + kDecodeRows <= wr.r1; r += kDecodeRows) tile<Dec, kDecodeRows, 1>(p, r, tb);
      for (; r < wr.r1; ++r) tile<Dec, 1, 1>(p, r, tb);
      continue;
    }
    for (; r + R <= wr.r1; r += R) {
      int64_t t = tb;
      for (; t + T <= te; t += T) tile<Dec, R, T>(p, r, t);
      for (; t < te; ++t) tile<Dec, R, 1>(p, r, t);
    }
    for (; r < wr.r1; ++r) {
      int64_t t = tb;
      for (; t + T <= te; t += T) tile<Dec, 1, T>(p, r, t);
      for (; t < te; ++t) tile<Dec, 1, 1>(p, r, t);
    }
  }
}

template <typename Dec>
void run(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool) {
  const int64_t n_in = w.ne[0], n_out = w.rows();
  // The caller's, reused across calls: no large allocation per decode step.
  QuantizedActs& acts = pool.scratch(0).get<QuantizedActs>();
  quantize_acts_prepare(n_tok, n_in, acts, act_scale_blocks(w.type));
  if (n_tok >= 8 && pool.size() > 1) {
    pool.parallel_for(n_tok, 4, [&](int64_t t0, int64_t t1) { quantize_acts_rows(x, t0, t1, acts); });
  } else {
    quantize_acts_rows(x, 0, n_tok, acts);
  }
  const DTypeInfo* info = dtype_info(w.type);
  Problem p{&w, &acts, y, n_out, (acts.n_blocks + kActChunkBlocks - 1) / kActChunkBlocks,
            Dec::kSuper ? info->block_bytes : info->block_bytes * kActChunkBlocks, w.row_bytes()};
  const int64_t row_align = n_tok == 1 ? kDecodeRows : kPrefillRows;
  pool.run_chunks(work_chunks(n_out, n_tok, row_align, pool.size()), [&](int ci, int nc) {
    const WorkRange wr = split_work(n_out, n_tok, row_align, ci, nc);
    if (wr.r0 < wr.r1 && wr.t0 < wr.t1) run_range<Dec>(p, wr);
  });
}

}  // namespace

void matmul_quantized(const TensorView& w, const float* x, float* y, int64_t n_tok,
                      ThreadPool& pool) {
  switch (w.type) {
    case DType::Q4_0: return run<quant::DecQ4_0>(w, x, y, n_tok, pool);
    case DType::Q4_1: return run<quant::DecQ4_1>(w, x, y, n_tok, pool);
    case DType::Q5_0: return run<quant::DecQ5_0>(w, x, y, n_tok, pool);
    case DType::Q5_1: return run<quant::DecQ5_1>(w, x, y, n_tok, pool);
    case DType::Q8_0: return run<quant::DecQ8_0>(w, x, y, n_tok, pool);
    case DType::Q4_K: return run<quant::DecQ4_K>(w, x, y, n_tok, pool);
    case DType::Q5_K: return run<quant::DecQ5_K>(w, x, y, n_tok, pool);
    case DType::Q6_K: return run<quant::DecQ6_K>(w, x, y, n_tok, pool);
    case DType::Q2_K: return run<quant::DecQ2_K>(w, x, y, n_tok, pool);
    case DType::Q3_K: return run<quant::DecQ3_K>(w, x, y, n_tok, pool);
    case DType::IQ4_NL: return run<quant::DecIQ4_NL>(w, x, y, n_tok, pool);
    case DType::IQ4_XS: return run<quant::DecIQ4_XS>(w, x, y, n_tok, pool);
    case DType::MXFP4: return run<quant::DecMXFP4>(w, x, y, n_tok, pool);
    default: return;
  }
}

}  // namespace stride::detail
