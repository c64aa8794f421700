#include "kv/store/page_key_codes.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "core/fp16.h"

namespace stride {

PageKeyCodes::PageKeyCodes(int32_t n_pages, int n_kv_heads, int head_dim, int page_size)
    : n_pages_(n_pages), n_kv_heads_(n_kv_heads), head_dim_(head_dim), page_size_(page_size),
      padded_((page_size + 15) / 16 * 16) {
  assert(supported(head_dim));
  records_.resize((size_t)((int64_t)n_pages * n_kv_heads * record_bytes() / 64));
  stamp_ = std::make_unique<uint64_t[]>((size_t)n_pages);
}

void PageKeyCodes::encode(const KvPool& pool, int32_t page) {
  const int dim = head_dim_, ps = page_size_;
  assert(pool.shape().head_dim_k == dim && pool.shape().page_size == ps);
  std::vector<float> row((size_t)dim);   // [dim] one key, widened
  std::vector<int8_t> code((size_t)dim);  // [dim] its codes
  for (int h = 0; h < n_kv_heads_; ++h) {
    int8_t* out = record(page, h);  // [dim / 4, padded, 4]
    float* scale = reinterpret_cast<float*>(out + (int64_t)padded_ * dim);
    int32_t* sum = reinterpret_cast<int32_t*>(out + (int64_t)padded_ * (dim + 4));
    for (int t = 0; t < padded_; ++t) {
      float s = 0.f;
      if (t >= ps) {
        std::fill(code.begin(), code.end(), (int8_t)0);
      } else if (pool.storage() == KvStorage::Int8) {
        // The pool's own codes: the same quantization, nothing lost twice.
        std::copy_n(pool.k8(page, h) + (int64_t)t * dim, dim, code.begin());
        s = pool.k_scale(page, h)[t];
      } else {
        for (int c = 0; c < dim; ++c)
          row[(size_t)c] = pool.storage() == KvStorage::F16 ? fp16_to_fp32(pool.k(page, h)[(int64_t)t * dim + c])
                                                            : pool.k32(page, h)[(int64_t)t * dim + c];
        s = quantize_row_int8(row.data(), dim, code.data());
      }
      int32_t total = 0;
      for (int c = 0; c < dim; ++c) {
        out[((int64_t)(c / 4) * padded_ + t) * 4 + c % 4] = code[(size_t)c];
        total += code[(size_t)c];
      }
      scale[t] = s;
      sum[t] = total;
    }
  }
  stamp_[page] = (uint64_t)1 << 32 | page_version(pool, page);
}

}  // namespace stride
