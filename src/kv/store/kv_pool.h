#pragma once
// The physical KV storage: a fixed number of pages, each holding one layer's
// keys and values for page_size tokens plus the absolute position of every
// slot (each cell stores its own position; nothing is derived from the slot).
//
// Layout per page is head-major so that one kv head's keys of a page are one
// contiguous run the kernel streams:
//   K: [n_kv_heads, page_size, head_dim_k] f16 | f32 | int8
//   V: [n_kv_heads, page_size, head_dim_v] f16 | f32 | int8
//   int8 only: K scales [n_kv_heads, page_size] f32, V scales likewise
//              (x ~= q * scale, symmetric, scale = max|x| / 127 per token and head)
//   positions: [page_size] int32
// Which page belongs to whom is PageManager's business; this class is storage.
#include <cstdint>
#include <memory>
#include <span>

#include "core/status.h"
#include "kv/store/kv_storage.h"

namespace stride {

struct KvPoolShape {
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int page_size = 0;
  KvStorage storage = KvStorage::F16;

  int64_t bytes_per_element() const {
    return storage == KvStorage::F32 ? 4 : storage == KvStorage::F16 ? 2 : 1;
  }
  // K + V of one page, with the int8 scales (positions are bookkeeping, not counted).
  int64_t bytes_per_page() const {
    const int64_t tokens_heads = (int64_t)page_size * n_kv_heads;
    const int64_t scales = storage == KvStorage::Int8 ? 2 * (int64_t)sizeof(float) : 0;
    return tokens_heads * ((head_dim_k + head_dim_v) * bytes_per_element() + scales);
  }
};

// Symmetric int8 quantization of one row of n values: returns the scale
// (max|x| / 127; 0 for an all-zero row) and writes q = round(x / scale).
float quantize_row_int8(const float* x, int n, int8_t* q);

class KvPool {
  struct Private {};  // passkey: construct through create()

 public:
  KvPool(Private, const KvPoolShape& shape, int32_t n_pages) : shape_(shape), n_pages_(n_pages) {}
  static Expected<std::unique_ptr<KvPool>> create(const KvPoolShape& shape, int32_t n_pages);

  const KvPoolShape& shape() const { return shape_; }
  KvStorage storage() const { return shape_.storage; }
  int32_t n_pages() const { return n_pages_; }

  // f16 mode: [page_size, head_dim_k] keys of one kv head in one page.
  uint16_t* k(int32_t page, int head) { return k_.get() + k_offset(page, head); }
  const uint16_t* k(int32_t page, int head) const { return k_.get() + k_offset(page, head); }
  // f16 mode: [page_size, head_dim_v]
  uint16_t* v(int32_t page, int head) { return v_.get() + v_offset(page, head); }
  const uint16_t* v(int32_t page, int head) const { return v_.get() + v_offset(page, head); }
  // f32 mode: [page_size, head_dim_k] / [page_size, head_dim_v]
  const float* k32(int32_t page, int head) const { return k32_.get() + k_offset(page, head); }
  const float* v32(int32_t page, int head) const { return v32_.get() + v_offset(page, head); }
  // int8 mode: [page_size, head_dim_k] / [page_size, head_dim_v] and [page_size] scales
  const int8_t* k8(int32_t page, int head) const { return k8_.get() + k_offset(page, head); }
  const int8_t* v8(int32_t page, int head) const { return v8_.get() + v_offset(page, head); }
  const float* k_scale(int32_t page, int head) const { return k_scale_.get() + scale_offset(page, head); }
  const float* v_scale(int32_t page, int head) const { return v_scale_.get() + scale_offset(page, head); }
  // [page_size]
  int32_t* positions(int32_t page) { return pos_.get() + (int64_t)page * shape_.page_size; }
  const int32_t* positions(int32_t page) const {
    return pos_.get() + (int64_t)page * shape_.page_size;
  }

  // Stores n tokens into consecutive slots [slot, slot + n) of a page.
  //   k: rows of [n_kv_heads, head_dim_k] f32 with stride k_row between tokens
  void store(int32_t page, int slot, int n, const float* k, int64_t k_row, const float* v,
             int64_t v_row, int64_t first_pos);

  // The whole page as one byte image (K, V, int8 scales, positions), so the
  // offload tier can hold it and bring it back bit for bit (kv_page_image.cpp).
  int64_t page_image_bytes() const { return shape_.bytes_per_page() + (int64_t)shape_.page_size * 4; }
  // image: [page_image_bytes()]
  void save_page(int32_t page, std::span<uint8_t> image) const;
  void load_page(int32_t page, std::span<const uint8_t> image);

  // Changes whenever a page's contents may have changed (store, load_page),
  // so a copy derived from a page (PageKeyCodes) can tell it is stale.
  friend uint32_t page_version(const KvPool& pool, int32_t page) { return pool.version_[page]; }

 private:
  // Byte runs of one page: K, V, K scales, V scales, positions (empty when not stored).
  std::span<uint8_t> page_parts(int32_t page, int part) const;

  int64_t k_offset(int32_t page, int head) const {
    return ((int64_t)page * shape_.n_kv_heads + head) * shape_.page_size * shape_.head_dim_k;
  }
  int64_t v_offset(int32_t page, int head) const {
    return ((int64_t)page * shape_.n_kv_heads + head) * shape_.page_size * shape_.head_dim_v;
  }
  int64_t scale_offset(int32_t page, int head) const {
    return ((int64_t)page * shape_.n_kv_heads + head) * shape_.page_size;
  }

  KvPoolShape shape_;
  int32_t n_pages_ = 0;
  // Uninitialised on purpose: the OS maps memory lazily, so an unused budget
  // costs nothing. Only the buffers of the pool's storage are allocated.
  std::unique_ptr<uint16_t[]> k_;  // f16
  std::unique_ptr<uint16_t[]> v_;
  std::unique_ptr<float[]> k32_;   // f32
  std::unique_ptr<float[]> v32_;
  std::unique_ptr<int8_t[]> k8_;   // int8
  std::unique_ptr<int8_t[]> v8_;
  std::unique_ptr<float[]> k_scale_;
  std::unique_ptr<float[]> v_scale_;
  std::unique_ptr<int32_t[]> pos_;
  std::unique_ptr<uint32_t[]> version_;  // [n_pages], from 0
};

}  // namespace stride
