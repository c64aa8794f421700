#pragma once
// Pure bookkeeping for the paged KV pool: a free list and reference counts.
// It holds no tensors, so it is tested on its own. Ready for prefix sharing:
// a page stays allocated while any sequence references it.
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace stride {

class PageManager {
 public:
  explicit PageManager(int32_t n_pages);

  // All-or-nothing: either n pages are appended to `out` (ref count 1 each)
  // or ResourceExhausted is returned and nothing changes.
  Status allocate(int32_t n, std::vector<int32_t>& out);
  void retain(int32_t page);   // one more reference
  void release(int32_t page);  // one fewer; back to the free list at zero

  int32_t n_total() const { return (int32_t)ref_counts_.size(); }
  int32_t n_free() const { return (int32_t)free_list_.size(); }
  int32_t n_used() const { return n_total() - n_free(); }
  int32_t ref_count(int32_t page) const { return ref_counts_[page]; }

 private:
  std::vector<int32_t> free_list_;   // LIFO: recently freed pages are warm in cache
  std::vector<int32_t> ref_counts_;  // [n_pages]
};

}  // namespace stride
