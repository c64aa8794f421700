// Matmul over PackedMatrix weights: a tile is 8 rows (one per int32 lane) x
// up to kTileToks tokens. Per 32-element block, each weight vector is unpacked
// once and multiplied with a broadcast 4-byte word of every token's int8
// activations: with AVX512-VNNI by vpdpbusd straight into int32; with AVX2 by
// maddubs, the int16 sums going to int32 once per `group` vectors. The
// block's float scale is applied with one FMA per token for all 8 rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul_impl.h"
#include "kernels/packed_format.h"
#include "kernels/packed_matrix.h"
#include "kernels/quant_act.h"

namespace stride {
namespace {

using packed::Layout;

// AVX512-VNNI (256-bit, EVEX): vpdpbusd multiplies u8 x s8 and accumulates in
// int32 in one instruction, so there is no int16 stage to flush, and 32 vector
// registers hold the accumulators of 8 tokens; each unpacked weight vector then
// feeds twice as many tokens. Integer sums are exact on both paths, so the two
// produce identical results.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define STRIDE_PACKED_VNNI 1
constexpr int kTileToks = 8;
constexpr int kVnniMinToks = 4;  // narrower tiles take the maddubs path
#else
constexpr int kTileToks = 4;
#endif
constexpr int64_t kTokenBlock = 64;  // tokens whose int8 activations stay in L2

struct Problem {
  const PackedMatrix* w;
  const QuantizedActs* a;
  float* y;  // [n_tok, n_out]
};

#ifdef STRIDE_PACKED_VNNI
// idot[t] = per-row Σ q * x over block b (Q6_K: Σ sc * q * x, the -32 not yet
// applied), as the AVX2 path computes it.
template <const Layout& L, int T>
inline void block_dot_vnni(const uint8_t* sub, const int8_t* const* xq, int64_t b, __m256i* idot) {
  __m256i hi[L.q6 ? T : 1];  // Q6_K: sums of vectors 4-7 (elements 16-31), scaled apart
  for (int t = 0; t < T; ++t) idot[t] = _mm256_setzero_si256();
  if constexpr (L.q6)
    for (int t = 0; t < T; ++t) hi[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i v = packed::vec<L>(sub, g);
    __m256i av;
    if constexpr (L.is_signed) av = _mm256_sign_epi8(v, v);  // |v| (-128 -> 128 unsigned)
    for (int t = 0; t < T; ++t) {
      int32_t x4;
      std::memcpy(&x4, xq[t] + b * 32 + 4 * g, 4);
      const __m256i xb = _mm256_set1_epi32(x4);
      if constexpr (L.is_signed) {
        idot[t] = _mm256_dpbusd_epi32(idot[t], av, _mm256_sign_epi8(xb, v));
      } else if constexpr (L.q6) {
        if (g < 4) idot[t] = _mm256_dpbusd_epi32(idot[t], v, xb);
        else hi[t] = _mm256_dpbusd_epi32(hi[t], v, xb);
      } else {
        idot[t] = _mm256_dpbusd_epi32(idot[t], v, xb);
      }
    }
  }
  if constexpr (L.q6) {
    const __m256i pairs = packed::q6_scale_pairs(sub);  // int16 (sc_lo, sc_hi) per row
    const __m256i sc_lo = _mm256_srai_epi32(_mm256_slli_epi32(pairs, 16), 16);
    const __m256i sc_hi = _mm256_srai_epi32(pairs, 16);
    for (int t = 0; t < T; ++t)
      idot[t] = _mm256_add_epi32(_mm256_mullo_epi32(idot[t], sc_lo), _mm256_mullo_epi32(hi[t], sc_hi));
  }
}
#endif

// One block's integer dots for T tokens through maddubs (int16 pairs, then
// madd with the layout's factor).
template <const Layout& L, int T>
__attribute__((always_inline)) inline void block_dot_maddubs(const uint8_t* sub, const int8_t* const* xq, int64_t b,
                                                             __m256i* idot) {
#pragma GCC unroll 8
  for (int g0 = 0; g0 < 8; g0 += L.group) {
    __m256i i16[T];
#pragma GCC unroll 8
    for (int g = g0; g < g0 + L.group; ++g) {
      const __m256i v = packed::vec<L>(sub, g);
      __m256i av;
      if constexpr (L.is_signed) av = _mm256_sign_epi8(v, v);  // |v| (-128 -> 128 unsigned)
      for (int t = 0; t < T; ++t) {
        int32_t x4;
        std::memcpy(&x4, xq[t] + b * 32 + 4 * g, 4);
        const __m256i xb = _mm256_set1_epi32(x4);
        const __m256i prod = L.is_signed ? _mm256_maddubs_epi16(av, _mm256_sign_epi8(xb, v))
                                         : _mm256_maddubs_epi16(v, xb);
        i16[t] = g == g0 ? prod : _mm256_add_epi16(i16[t], prod);
      }
    }
    const __m256i f = packed::madd_factor<L>(sub, g0);
    for (int t = 0; t < T; ++t) {
      const __m256i m = _mm256_madd_epi16(i16[t], f);
      idot[t] = g0 == 0 ? m : _mm256_add_epi32(idot[t], m);
    }
  }
}

// y[t0..t0+T, rows of group grp].
template <const Layout& L, int T>
void tile(const Problem& p, int64_t grp, int64_t t0) {
  const PackedMatrix& w = *p.w;
  const QuantizedActs& a = *p.a;
  const int8_t* xq[T];
  const float* xd[T];
  const float* xs[T];
  const int32_t* xh[T];
  const int32_t* xqs[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = a.q_row(t0 + t);
    xd[t] = a.d_row(t0 + t);
    xs[t] = a.s_row(t0 + t);
    xh[t] = a.hs_row(t0 + t);
    xqs[t] = a.qs_row(t0 + t);
  }
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t n_records = w.n_in / (32 * L.blocks);
  const uint8_t* rec = w.data.data() + grp * w.group_bytes;
  for (int64_t ri = 0; ri < n_records; ++ri, rec += L.record()) {
    for (int s = 0; s < L.blocks; ++s) {
      const int64_t b = ri * L.blocks + s;
      const uint8_t* sub = rec + L.header + s * L.sub;
      __m256i idot[T];
#ifdef STRIDE_PACKED_VNNI
      // With few tokens each vpdpbusd chain waits on its own latency; the
      // maddubs path keeps more independent work in flight (decode).
      if constexpr (T >= kVnniMinToks) {
        block_dot_vnni<L, T>(sub, xq, b, idot);
      } else
#endif
      {
        block_dot_maddubs<L, T>(sub, xq, b, idot);
      }
      if constexpr (L.q6) {
        // Σ sc * (q - 32) * x = Σ sc * q * x - 32 * (sc_lo * Σx_lo + sc_hi * Σx_hi).
        const __m256i pairs = packed::q6_scale_pairs(sub);
        for (int t = 0; t < T; ++t) {
          const __m256i corr = _mm256_madd_epi16(_mm256_set1_epi32(xh[t][b]), pairs);
          idot[t] = _mm256_sub_epi32(idot[t], _mm256_slli_epi32(corr, 5));
        }
      }
      // A constant offset c (q - 8, q - 16) in integers: Σ (q - c) x = Σ q x - c Σ x,
      // one integer subtract instead of a float FMA with the block's x sum.
      constexpr bool kIntOffset = L.offset == packed::Offset::kMinus8 || L.offset == packed::Offset::kMinus16;
      if constexpr (kIntOffset) {
        constexpr int shift = L.offset == packed::Offset::kMinus8 ? 3 : 4;
        for (int t = 0; t < T; ++t)
          idot[t] = _mm256_sub_epi32(idot[t], _mm256_slli_epi32(_mm256_set1_epi32(xqs[t][b]), shift));
      }
      __m256 D, M;
      packed::block_scales<L>(rec, s, D, M);
      for (int t = 0; t < T; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot[t]), _mm256_mul_ps(D, _mm256_set1_ps(xd[t][b])),
                                 acc[t]);
        if constexpr (L.offset != packed::Offset::kNone && !kIntOffset)
          acc[t] = _mm256_fmadd_ps(M, _mm256_set1_ps(xs[t][b]), acc[t]);
      }
    }
  }
  const int64_t r0 = grp * kPackRows;
  const int64_t n_rows = std::min<int64_t>(kPackRows, w.n_out - r0);
  for (int t = 0; t < T; ++t) {
    float* dst = p.y + (t0 + t) * w.n_out + r0;
    if (n_rows == kPackRows) {
      _mm256_storeu_ps(dst, acc[t]);
    } else {
      alignas(32) float tmp[kPackRows];
      _mm256_store_ps(tmp, acc[t]);
      std::memcpy(dst, tmp, sizeof(float) * (size_t)n_rows);
    }
  }
}

// Groups [g0, g1) x tokens [t0, t1): token blocks outermost so their int8
// activations stay cached while the groups stream past; each group's
// weights stay in L1 across the token tiles of a block.
template <const Layout& L>
void run_range(const Problem& p, const detail::WorkRange& wr) {
  for (int64_t tb = wr.t0; tb < wr.t1; tb += kTokenBlock) {
    const int64_t te = std::min(wr.t1, tb + kTokenBlock);
    for (int64_t g = wr.r0; g < wr.r1; ++g) {
      int64_t t = tb;
      for (; t + kTileToks <= te; t += kTileToks) tile<L, kTileToks>(p, g, t);
      switch (te - t) {
#ifdef STRIDE_PACKED_VNNI
        case 7: tile<L, 7>(p, g, t); break;
        case 6: tile<L, 6>(p, g, t); break;
        case 5: tile<L, 5>(p, g, t); break;
        case 4: tile<L, 4>(p, g, t); break;
#endif
        case 3: tile<L, 3>(p, g, t); break;
        case 2: tile<L, 2>(p, g, t); break;
        case 1: tile<L, 1>(p, g, t); break;
        default: break;
      }
    }
  }
}

// run_range for the layout of p.w's type.
void run_range_any(const Problem& p, const detail::WorkRange& wr) {
  switch (p.w->type) {
    case DType::Q4_0: return run_range<packed::kQ4_0>(p, wr);
    case DType::Q4_1: return run_range<packed::kQ4_1>(p, wr);
    case DType::Q5_0: return run_range<packed::kQ5_0>(p, wr);
    case DType::Q5_1: return run_range<packed::kQ5_1>(p, wr);
    case DType::Q8_0: return run_range<packed::kQ8_0>(p, wr);
    case DType::Q4_K: return run_range<packed::kQ4_K>(p, wr);
    case DType::Q5_K: return run_range<packed::kQ5_K>(p, wr);
    case DType::Q6_K: return run_range<packed::kQ6_K>(p, wr);
    default: return;  // pack_matrix produces only the types above
  }
}

QuantizedActs& scratch_acts() {
  thread_local QuantizedActs acts;
  return acts;
}

}  // namespace

void matmul_packed_multi(const PackedMatrix* const* ws, float* const* ys, int n_mats,
                         const float* x, int64_t n_tok, ThreadPool& pool) {
  if (n_tok <= 0 || n_mats <= 0) return;
  const int64_t n_in = ws[0]->n_in;
  for (int i = 1; i < n_mats; ++i) {
    if (ws[i]->n_in != n_in) {  // programmer error: each x row fits one row length
      for (int j = 0; j < n_mats; ++j) matmul_packed(*ws[j], x, ys[j], n_tok, pool);
      return;
    }
  }
  QuantizedActs& acts = scratch_acts();
  quantize_acts_prepare(n_tok, n_in, acts);
  if (n_tok >= 8 && pool.size() > 1) {
    // A few chunks per thread, claimed dynamically (see ThreadPool::run_chunks).
    const int chunks = (int)std::min<int64_t>(n_tok / 4, 4 * (int64_t)pool.size());
    pool.run_chunks(chunks, [&](int c, int nc) {
      const int64_t t0 = n_tok * c / nc, t1 = n_tok * (c + 1) / nc;
      if (t0 < t1) quantize_acts_rows(x, t0, t1, acts);
    });
  } else {
    quantize_acts_rows(x, 0, n_tok, acts);
  }
  // The matrices' groups, concatenated, are the work units of one dispatch.
  constexpr int kMaxMats = 4;
  Problem probs[kMaxMats];
  int64_t first[kMaxMats + 1] = {0};
  const int n = std::min(n_mats, kMaxMats);
  for (int i = 0; i < n; ++i) {
    probs[i] = Problem{ws[i], &acts, ys[i]};
    first[i + 1] = first[i] + ws[i]->n_groups;
  }
  const int64_t units = first[n];
  pool.run_chunks(detail::work_chunks(units, n_tok, 1, pool.size()), [&](int ci, int nc) {
    const detail::WorkRange wr = detail::split_work(units, n_tok, 1, ci, nc);
    if (wr.r0 >= wr.r1 || wr.t0 >= wr.t1) return;
    for (int i = 0; i < n; ++i) {
      const int64_t g0 = std::max(wr.r0, first[i]), g1 = std::min(wr.r1, first[i + 1]);
      if (g0 < g1) run_range_any(probs[i], {g0 - first[i], g1 - first[i], wr.t0, wr.t1});
    }
  });
  // More matrices than one dispatch holds: the rest in further dispatches.
  if (n_mats > kMaxMats) matmul_packed_multi(ws + kMaxMats, ys + kMaxMats, n_mats - kMaxMats, x, n_tok, pool);
}

void matmul_packed(const PackedMatrix& w, const float* x, float* y, int64_t n_tok,
                   ThreadPool& pool) {
  if (n_tok <= 0 || w.n_out <= 0) return;
  if (!packable(w.type)) {
    // Programmer error (pack_matrix produces only packable types).
    std::fill(y, y + n_tok * w.n_out, 0.0f);
    return;
  }
  const PackedMatrix* ws[1] = {&w};
  float* ys[1] = {y};
  matmul_packed_multi(ws, ys, 1, x, n_tok, pool);
}

}  // namespace stride
