#include "kv/store/page_summary.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace stride {

PageSummaries::PageSummaries(int32_t n_pages, int n_kv_heads, int head_dim)
    : n_pages_(n_pages),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      // Uninitialised: a page's summary is written when its slot 0 is.
      data_(std::make_unique_for_overwrite<float[]>((size_t)n_pages * n_kv_heads * 2 * head_dim)) {}

void PageSummaries::update(int32_t page, int slot, int n, const float* k, int64_t k_row) {
  for (int h = 0; h < n_kv_heads_; ++h) {
    float* mn = data_.get() + offset(page, h);
    float* mx = mn + head_dim_;
    for (int t = 0; t < n; ++t) {
      const float* key = k + t * k_row + (int64_t)h * head_dim_;
      if (slot + t == 0) {
        std::copy(key, key + head_dim_, mn);
        std::copy(key, key + head_dim_, mx);
        continue;
      }
      for (int i = 0; i < head_dim_; ++i) {
        mn[i] = std::min(mn[i], key[i]);
        mx[i] = std::max(mx[i], key[i]);
      }
    }
  }
}

float summary_bound(const float* q, const float* mn, const float* mx, int dim) {
  float s = 0.f;
  for (int i = 0; i < dim; ++i) s += std::max(q[i] * mn[i], q[i] * mx[i]);
  return s;
}

float summary_box_bound(const float* q_lo, const float* q_hi, const float* mn, const float* mx,
                        int dim) {
  float s = 0.f;
  for (int i = 0; i < dim; ++i)
    s += std::max(std::max(q_lo[i] * mn[i], q_lo[i] * mx[i]),
                  std::max(q_hi[i] * mn[i], q_hi[i] * mx[i]));
  return s;
}

void PageSummaries::save_page(int32_t page, std::span<uint8_t> image) const {
  assert((int64_t)image.size() >= page_bytes());
  std::memcpy(image.data(), data_.get() + offset(page, 0), (size_t)page_bytes());
}

void PageSummaries::load_page(int32_t page, std::span<const uint8_t> image) {
  assert((int64_t)image.size() >= page_bytes());
  std::memcpy(data_.get() + offset(page, 0), image.data(), (size_t)page_bytes());
}

}  // namespace stride
