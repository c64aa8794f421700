// The int8 page log-sum-exp's table of variants, the query quantization and
// the scalar reference.
#include "attention/page_logsumexp_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace stride {

void Int8Rows::quantize(const float* const* rows, int n, int head_dim) {
  n_rows = n;
  dim = head_dim;
  const int padded = (n + kInt8RowTile - 1) / kInt8RowTile * kInt8RowTile;
  codes.assign((size_t)padded * dim, 0);
  scales.assign((size_t)padded, 0.f);
  for (int r = 0; r < n; ++r) scales[(size_t)r] = quantize_row_int8(rows[r], dim, codes.data() + (size_t)r * dim);
  biased.resize(codes.size() / 4);
  for (size_t w = 0; w < biased.size(); ++w) {
    uint32_t word;
    std::memcpy(&word, codes.data() + 4 * w, 4);
    biased[w] = (int32_t)(word ^ 0x80808080u);
  }
}

PageLogsumexpInt8Fn page_logsumexp_int8_for(CpuPath p) {
  switch (p) {
    case CpuPath::Amx:
    case CpuPath::Avx512: return &isa::avx512::page_logsumexp_int8;
    case CpuPath::Avx2: break;
  }
  return &isa::avx2::page_logsumexp_int8;
}

void page_logsumexp_int8(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows, float scale,
                         float* work, float* top, float* sum) {
  page_logsumexp_int8_for(active_cpu_path())(codes, page, head, rows, scale, work, top, sum);
}

void page_logsumexp_int8_ref(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows,
                             float scale, float* /*work*/, float* top_out, float* sum_out) {
  const int dim = rows.dim, padded = codes.padded_page(), n = codes.page_size();
  const int8_t* k = codes.codes(page, head);  // [dim / 4, padded, 4]
  const float* ks = codes.scales(page, head);
  std::vector<double> logits((size_t)n);
  for (int r = 0; r < rows.n_rows; ++r) {
    const int8_t* q = rows.codes.data() + (size_t)r * dim;
    double top = -INFINITY;
    for (int t = 0; t < n; ++t) {
      int64_t dot = 0;
      for (int c = 0; c < dim; ++c) dot += (int64_t)q[c] * k[((int64_t)(c / 4) * padded + t) * 4 + c % 4];
      top = std::max(top, logits[(size_t)t] = (double)scale * rows.scales[(size_t)r] * ks[t] * (double)dot);
    }
    double sum = 0;
    for (const double l : logits) sum += std::exp(l - top);
    top_out[r] = (float)top;
    sum_out[r] = (float)sum;
  }
}

}  // namespace stride
