#pragma once
// An int8 copy of each page's keys for the second stage of two-stage top-k
// (estimate=rerank,rerank_keys=int8): symmetric per token and kv head
// (k ~= code * scale, scale = max|k| / 127), laid out so one 64-byte load
// holds 4 channels of 16 keys, the operand of a VNNI dot product:
//   codes:  [n_pages, n_kv_heads, head_dim / 4, padded_page, 4] int8
//   scales: [n_pages, n_kv_heads, padded_page] f32 (0 past page_size)
//   sums:   [n_pages, n_kv_heads, padded_page] int32, sum of a key's codes
// padded_page is page_size rounded up to 16; the padding keys are zero.
// A page is encoded once, when it fills; a later store or load_page into it
// (page_version in kv_pool.h) makes the copy stale, and readers fall back to the
// pool's own keys. Half the bytes of f16 keys, a quarter of f32 ones.
#include <immintrin.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/huge_page_allocator.h"

#include "kv/store/kv_pool.h"

namespace stride {

class PageKeyCodes {
 public:
  // head_dim must be a multiple of 4 (supported(): callers check).
  PageKeyCodes(int32_t n_pages, int n_kv_heads, int head_dim, int page_size);
  static bool supported(int head_dim) { return head_dim > 0 && head_dim % 4 == 0; }

  // Encodes every kv head's keys of a full page from the pool's storage.
  void encode(const KvPool& pool, int32_t page);
  // Whether page's copy holds the pool's current keys.
  bool current(const KvPool& pool, int32_t page) const {
    return stamp_[page] == ((uint64_t)1 << 32 | page_version(pool, page));
  }

  const int8_t* codes(int32_t page, int head) const { return codes_.data() + slot(page, head) * head_dim_; }
  const float* scales(int32_t page, int head) const { return scales_.data() + slot(page, head); }
  const int32_t* sums(int32_t page, int head) const { return sums_.data() + slot(page, head); }
  // Requests kv head `head`'s codes, scales and sums of `page` into the cache
  // ahead of a read: pages lie anywhere in the pool.
  void prefetch(int32_t page, int head) const {
    const char* c = (const char*)codes(page, head);
    const int64_t bytes = (int64_t)head_dim_ * padded_;
    for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(c + b, _MM_HINT_T0);
    for (const char* p : {(const char*)scales(page, head), (const char*)sums(page, head)})
      for (int64_t b = 0; b < (int64_t)padded_ * 4; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
  }

  int head_dim() const { return head_dim_; }
  int page_size() const { return page_size_; }
  int padded_page() const { return padded_; }
  int64_t bytes_per_page() const { return bytes_per_page(n_kv_heads_, head_dim_, page_size_); }
  // One page's copy: codes, scales and sums of every kv head's padded keys.
  static int64_t bytes_per_page(int n_kv_heads, int head_dim, int page_size) {
    return (int64_t)n_kv_heads * ((page_size + 15) / 16 * 16) * (head_dim + 8);
  }

 private:
  int64_t slot(int32_t page, int head) const { return ((int64_t)page * n_kv_heads_ + head) * padded_; }

  int n_kv_heads_, head_dim_, page_size_, padded_;
  // Uninitialised but for the stamps, like the pool: pages never encoded cost
  // nothing. On 2 MiB pages (huge_page_allocator.h): the second stage reads
  // a few KiB at each of hundreds of scattered pages a step, and on 4 KiB
  // pages each of those reads starts with a TLB miss.
  std::vector<int8_t, HugePageAllocator<int8_t>> codes_;
  std::vector<float, HugePageAllocator<float>> scales_;
  std::vector<int32_t, HugePageAllocator<int32_t>> sums_;
  std::unique_ptr<uint64_t[]> stamp_;  // [n_pages] 1 << 32 | the pool's version when encoded; 0: never
};

}  // namespace stride
