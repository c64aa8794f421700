#include "attention/page_mass.h"

#include <algorithm>
#include <cmath>

#include "core/fp16.h"

namespace stride {

std::vector<double> exact_page_mass(const float* const* rows, int n_rows, int dim, float scale,
                                    const float* keys, int64_t n_keys, int page_size) {
  const int64_t n_pages = n_keys <= 0 ? 0 : (n_keys + page_size - 1) / page_size;
  std::vector<double> mass((size_t)n_pages, 0.0);
  if (n_rows <= 0 || n_pages == 0) return mass;
  std::vector<double> logits((size_t)n_keys);
  for (int r = 0; r < n_rows; ++r) {
    double top = -INFINITY;
    for (int64_t i = 0; i < n_keys; ++i) {
      double dot = 0;
      for (int t = 0; t < dim; ++t) dot += (double)rows[r][t] * (double)keys[i * dim + t];
      logits[(size_t)i] = (double)scale * dot;
      top = std::max(top, logits[(size_t)i]);
    }
    double total = 0;
    for (double& l : logits) total += (l = std::exp(l - top));
    for (int64_t i = 0; i < n_keys; ++i) mass[(size_t)(i / page_size)] += logits[(size_t)i] / total / n_rows;
  }
  return mass;
}

std::vector<float> gather_head_keys(const KvPool& pool, const std::vector<int32_t>& page_table, int64_t n_keys,
                                    int head, std::vector<int64_t>* absent) {
  const KvPoolShape& shape = pool.shape();
  const int ps = shape.page_size, dim = shape.head_dim_k;
  std::vector<float> out((size_t)std::max<int64_t>(0, n_keys) * dim, 0.f);
  for (int64_t L = 0; L * ps < n_keys; ++L) {
    const int32_t page = L < (int64_t)page_table.size() ? page_table[(size_t)L] : -1;
    if (page < 0) {
      if (absent) absent->push_back(L);
      continue;
    }
    const int64_t n = std::min<int64_t>(ps, n_keys - L * ps);
    for (int64_t slot = 0; slot < n; ++slot) {
      float* dst = out.data() + (L * ps + slot) * dim;
      switch (shape.storage) {
        case KvStorage::F32:
          std::copy_n(pool.k32(page, head) + slot * dim, dim, dst);
          break;
        case KvStorage::F16:
          for (int t = 0; t < dim; ++t) dst[t] = fp16_to_fp32(pool.k(page, head)[slot * dim + t]);
          break;
        case KvStorage::Int8: {
          const float s = pool.k_scale(page, head)[slot];
          for (int t = 0; t < dim; ++t) dst[t] = (float)pool.k8(page, head)[slot * dim + t] * s;
          break;
        }
      }
    }
  }
  return out;
}

std::vector<float> oracle_page_scores(const KvPool& pool, const std::vector<int32_t>& page_table, int64_t kv_len,
                                      const float* q, int n_q, int n_head, int n_kv_heads, float scale) {
  const int ps = pool.shape().page_size, dim = pool.shape().head_dim_k;
  const int64_t n_pages = kv_len <= 0 ? 0 : (kv_len + ps - 1) / ps;
  const int group = n_head / n_kv_heads;
  const float s = scale > 0.f ? scale : 1.f / std::sqrt((float)dim);
  std::vector<float> out((size_t)n_kv_heads * n_pages, -1.f);  // [n_kv_heads, n_pages]
  std::vector<const float*> rows;
  for (int h = 0; h < n_kv_heads; ++h) {
    std::vector<int64_t> absent;
    const std::vector<float> keys = gather_head_keys(pool, page_table, kv_len, h, &absent);
    rows.clear();
    for (int i = 0; i < n_q; ++i)
      for (int g = 0; g < group; ++g) rows.push_back(q + ((size_t)i * n_head + (size_t)h * group + g) * dim);
    const std::vector<double> mass = exact_page_mass(rows.data(), (int)rows.size(), dim, s, keys.data(), kv_len, ps);
    for (int64_t L = 0; L < n_pages; ++L) out[(size_t)h * n_pages + L] = (float)mass[(size_t)L];
    for (const int64_t L : absent) out[(size_t)h * n_pages + L] = -1.f;
  }
  return out;
}

}  // namespace stride
