#pragma once
// The physical KV storage: a fixed number of pages, each holding one layer's
// f16 keys and values for page_size tokens plus the absolute position of every
// slot (each cell stores its own position; nothing is derived from the slot).
//
// Layout per page is head-major so that one kv head's keys of a page are one
// contiguous run the kernel streams:
//   K: [n_kv_heads, page_size, head_dim_k] f16
//   V: [n_kv_heads, page_size, head_dim_v] f16
//   positions: [page_size] int32
// Which page belongs to whom is PageManager's business; this class is storage.
#include <cstdint>
#include <memory>

#include "core/status.h"

namespace stride {

struct KvPoolShape {
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int page_size = 0;
  // f32 storage instead of f16: exact, for comparisons against f32 oracles.
  bool f32 = false;

  int64_t bytes_per_element() const { return f32 ? 4 : 2; }
  // K + V of one page (positions are bookkeeping, not counted).
  int64_t bytes_per_page() const {
    return (int64_t)page_size * n_kv_heads * (head_dim_k + head_dim_v) * bytes_per_element();
  }
};

class KvPool {
  struct Private {};  // passkey: construct through create()

 public:
  KvPool(Private, const KvPoolShape& shape, int32_t n_pages) : shape_(shape), n_pages_(n_pages) {}
  static Expected<std::unique_ptr<KvPool>> create(const KvPoolShape& shape, int32_t n_pages);

  const KvPoolShape& shape() const { return shape_; }
  int32_t n_pages() const { return n_pages_; }

  // [page_size, head_dim_k] keys of one kv head in one page.
  uint16_t* k(int32_t page, int head) { return k_.get() + k_offset(page, head); }
  const uint16_t* k(int32_t page, int head) const { return k_.get() + k_offset(page, head); }
  // [page_size, head_dim_v]
  uint16_t* v(int32_t page, int head) { return v_.get() + v_offset(page, head); }
  const uint16_t* v(int32_t page, int head) const { return v_.get() + v_offset(page, head); }
  // f32 mode: [page_size, head_dim_k] / [page_size, head_dim_v]
  const float* k32(int32_t page, int head) const { return k32_.get() + k_offset(page, head); }
  const float* v32(int32_t page, int head) const { return v32_.get() + v_offset(page, head); }
  // [page_size]
  int32_t* positions(int32_t page) { return pos_.get() + (int64_t)page * shape_.page_size; }
  const int32_t* positions(int32_t page) const {
    return pos_.get() + (int64_t)page * shape_.page_size;
  }

  // Stores n tokens into consecutive slots [slot, slot + n) of a page.
  //   k: rows of [n_kv_heads, head_dim_k] f32 with stride k_row between tokens
  void store(int32_t page, int slot, int n, const float* k, int64_t k_row, const float* v,
             int64_t v_row, int64_t first_pos);

 private:
  int64_t k_offset(int32_t page, int head) const {
    return ((int64_t)page * shape_.n_kv_heads + head) * shape_.page_size * shape_.head_dim_k;
  }
  int64_t v_offset(int32_t page, int head) const {
    return ((int64_t)page * shape_.n_kv_heads + head) * shape_.page_size * shape_.head_dim_v;
  }

  KvPoolShape shape_;
  int32_t n_pages_ = 0;
  // Uninitialised on purpose: the OS maps memory lazily, so an unused budget costs nothing.
  std::unique_ptr<uint16_t[]> k_;
  std::unique_ptr<uint16_t[]> v_;
  std::unique_ptr<int32_t[]> pos_;
  std::unique_ptr<float[]> k32_;  // f32 mode only
  std::unique_ptr<float[]> v32_;
};

}  // namespace stride
