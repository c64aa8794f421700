// The page log-sum-exp's table of variants and its scalar reference.
#include "attention/page_logsumexp.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/fp16.h"

namespace stride {

PageLogsumexpFn page_logsumexp_for(CpuPath p) {
  switch (p) {
    case CpuPath::Amx:
    case CpuPath::Avx512: return &isa::avx512::page_logsumexp;
    case CpuPath::Avx2: break;
  }
  return &isa::avx2::page_logsumexp;
}

void page_logsumexp(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                    float scale, float* work, float* out) {
  page_logsumexp_for(active_cpu_path())(pool, page, head, n, rows, n_rows, scale, work, out);
}

void page_logsumexp_ref(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                        float scale, float* /*work*/, float* out) {
  const int dim = pool.shape().head_dim_k;
  // key(t, c): channel c of key t as the pool holds it, widened to f32.
  auto key = [&](int t, int c) -> double {
    switch (pool.storage()) {
      case KvStorage::F32: return pool.k32(page, head)[(int64_t)t * dim + c];
      case KvStorage::F16: return fp16_to_fp32(pool.k(page, head)[(int64_t)t * dim + c]);
      case KvStorage::Int8: return (double)pool.k8(page, head)[(int64_t)t * dim + c] * pool.k_scale(page, head)[t];
    }
    return 0.0;
  };
  std::vector<double> logits((size_t)n);
  for (int r = 0; r < n_rows; ++r) {
    double top = -INFINITY;
    for (int t = 0; t < n; ++t) {
      double dot = 0;
      for (int c = 0; c < dim; ++c) dot += (double)rows[r][c] * key(t, c);
      top = std::max(top, logits[(size_t)t] = (double)scale * dot);
    }
    double sum = 0;
    for (const double l : logits) sum += std::exp(l - top);
    out[r] = (float)(top + std::log(sum));
  }
}

}  // namespace stride
