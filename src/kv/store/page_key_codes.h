#pragma once
// An int8 copy of each page's keys for the second stage of two-stage top-k
// (estimate=rerank,rerank_keys=int8): symmetric per token and kv head
// (k ~= code * scale, scale = max|k| / 127), laid out so one 64-byte load
// holds 4 channels of 16 keys, the operand of a VNNI dot product. Each
// (kv head, page) is one record, the records of a kv head adjacent in page
// order:
//   records: [n_kv_heads, n_pages] of
//     codes:  [head_dim / 4, padded_page, 4] int8
//     scales: [padded_page] f32 (0 past page_size)
//     sums:   [padded_page] int32, sum of a key's codes
// padded_page is page_size rounded up to 16; the padding keys are zero. The
// second stage reads one kv head's shortlist on a thread, in page order: its
// records are then one ascending stream of whole cache lines, not three
// arrays gathered at once.
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

  const int8_t* codes(int32_t page, int head) const { return record(page, head); }
  const float* scales(int32_t page, int head) const {
    return reinterpret_cast<const float*>(record(page, head) + (int64_t)padded_ * head_dim_);
  }
  const int32_t* sums(int32_t page, int head) const {
    return reinterpret_cast<const int32_t*>(record(page, head) + (int64_t)padded_ * (head_dim_ + 4));
  }
  // Requests kv head `head`'s record of `page` into the cache ahead of a
  // read: the shortlist's pages lie anywhere in the pool.
  void prefetch(int32_t page, int head) const {
    const int8_t* r = record(page, head);
    for (int64_t b = 0; b < record_bytes(); b += 64) _mm_prefetch((const char*)r + b, _MM_HINT_T0);
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
  // A whole number of cache lines: padded_ is a multiple of 16 and head_dim_ of 4.
  int64_t record_bytes() const { return (int64_t)padded_ * (head_dim_ + 8); }
  int8_t* record(int32_t page, int head) {
    return reinterpret_cast<int8_t*>(records_.data()) + ((int64_t)head * n_pages_ + page) * record_bytes();
  }
  const int8_t* record(int32_t page, int head) const {
    return reinterpret_cast<const int8_t*>(records_.data()) + ((int64_t)head * n_pages_ + page) * record_bytes();
  }

  struct alignas(64) CacheLine {
    unsigned char bytes[64];
  };

  int32_t n_pages_;
  int n_kv_heads_, head_dim_, page_size_, padded_;
  // Uninitialised but for the stamps, like the pool: pages never encoded cost
  // nothing. On 2 MiB pages (huge_page_allocator.h): the second stage reads
  // a few KiB at each of hundreds of scattered pages a step, and on 4 KiB
  // pages each of those reads starts with a TLB miss.
  std::vector<CacheLine, HugePageAllocator<CacheLine>> records_;  // [n_kv_heads, n_pages] records
  std::unique_ptr<uint64_t[]> stamp_;  // [n_pages] 1 << 32 | the pool's version when encoded; 0: never
};

}  // namespace stride
