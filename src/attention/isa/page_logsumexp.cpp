// The page log-sum-exp (attention/page_logsumexp.h), a kernel variant
// compiled once per CPU target (stride_isa_variant in CMakeLists.txt). The
// logits come from the attention kernel's dot tiles (attention_tiles.h), so
// a key's score here is the one attention computes, on the same loads.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention/page_logsumexp.h"
#include "kernels/simd/exp.h"
#include "kernels/simd/loaders.h"
#include "kernels/simd/reduce.h"

#include "kernels/isa/begin.h"
#include "attention/attention_tiles.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

// R rows at once: each load of a key serves every row.
template <class L, int R>
void rows_logsumexp(const typename L::Elem* k, const float* ks, int n, int dim, const float* const* rows,
                    float scale, float* work, int stride, float* out) {
  float* s[R];  // R rows of [n] logits
  for (int r = 0; r < R; ++r) s[r] = work + (int64_t)r * stride;
  tiles::dot_rows<L, R>(rows, k, ks, n, dim, s);
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < n; ++t) s[r][t] *= scale;
    const float top = tiles::row_max(s[r], n);
    out[r] = top + std::log(tiles::exp_shift_sum(s[r], top, s[r], n));
  }
}

template <class L>
void page_rows(const typename L::Elem* k, const float* ks, int n, int dim, const float* const* rows, int n_rows,
               float scale, float* work, int stride, float* out) {
  int r = 0;
  for (; r + 4 <= n_rows; r += 4) rows_logsumexp<L, 4>(k, ks, n, dim, rows + r, scale, work, stride, out + r);
  for (; r + 2 <= n_rows; r += 2) rows_logsumexp<L, 2>(k, ks, n, dim, rows + r, scale, work, stride, out + r);
  for (; r < n_rows; ++r) rows_logsumexp<L, 1>(k, ks, n, dim, rows + r, scale, work, stride, out + r);
}

}  // namespace

void page_logsumexp(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                    float scale, float* work, float* out) {
  const int dim = pool.shape().head_dim_k, stride = pool.shape().page_size;
  switch (pool.storage()) {
    case KvStorage::F32:
      return page_rows<simd::F32Rows>(pool.k32(page, head), nullptr, n, dim, rows, n_rows, scale, work, stride, out);
    case KvStorage::F16:
      return page_rows<simd::F16Rows>(pool.k(page, head), nullptr, n, dim, rows, n_rows, scale, work, stride, out);
    case KvStorage::Int8:
      return page_rows<simd::I8Rows>(pool.k8(page, head), pool.k_scale(page, head), n, dim, rows, n_rows, scale,
                                     work, stride, out);
  }
}

}  // namespace stride::isa::STRIDE_ISA_NS

#include "kernels/isa/end.h"
