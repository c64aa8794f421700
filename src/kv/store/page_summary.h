#pragma once
// Per-page key summaries for content-routed (top-k) sparsity, as in Quest:
// for every physical page and kv head, the per-channel min and max of the
// page's keys. They live beside the pages (indexed by physical page id) and
// are updated as keys are written, so selection never reads the keys.
#include <cstdint>
#include <memory>
#include <span>

namespace stride {

class PageSummaries {
 public:
  PageSummaries(int32_t n_pages, int n_kv_heads, int head_dim);

  // Folds n tokens written at slots [slot, slot + n) of a page into its
  // summary; slot 0 starts the page afresh (pages are written in order).
  //   k: rows of [n_kv_heads, head_dim] f32 with stride k_row between tokens
  void update(int32_t page, int slot, int n, const float* k, int64_t k_row);

  // [head_dim] per-channel min / max of one kv head's keys in a page.
  const float* min(int32_t page, int head) const { return data_.get() + offset(page, head); }
  const float* max(int32_t page, int head) const {
    return data_.get() + offset(page, head) + head_dim_;
  }

  // One page's summaries as bytes, so an offloaded page keeps them exactly.
  static int64_t page_bytes(int n_kv_heads, int head_dim) { return (int64_t)n_kv_heads * 2 * head_dim * 4; }
  int64_t page_bytes() const { return page_bytes(n_kv_heads_, head_dim_); }
  // image: [page_bytes()]
  void save_page(int32_t page, std::span<uint8_t> image) const;
  void load_page(int32_t page, std::span<const uint8_t> image);

  int head_dim() const { return head_dim_; }
  int n_kv_heads() const { return n_kv_heads_; }
  // [n_pages, n_kv_heads, 2 (min, max), head_dim]: every summary, for scoring many pages at once.
  const float* data() const { return data_.get(); }
  int64_t bytes() const { return (int64_t)n_pages_ * n_kv_heads_ * 2 * head_dim_ * 4; }

 private:
  int64_t offset(int32_t page, int head) const {
    return ((int64_t)page * n_kv_heads_ + head) * 2 * head_dim_;
  }
  int32_t n_pages_;
  int n_kv_heads_;
  int head_dim_;
  std::unique_ptr<float[]> data_;  // [n_pages, n_kv_heads, 2 (min, max), head_dim]
};

// Upper bound of q . k over the keys a summary covers (Quest):
//   sum_i max(q_i * min_i, q_i * max_i)
float summary_bound(const float* q, const float* mn, const float* mx, int dim);

// Upper bound of q . k for every q in the box [q_lo, q_hi] (per channel) and
// every key of the summary: the best of the four corners per channel.
float summary_box_bound(const float* q_lo, const float* q_hi, const float* mn, const float* mx,
                        int dim);

}  // namespace stride
