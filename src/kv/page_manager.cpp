#include "kv/page_manager.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace stride {

PageManager::PageManager(int32_t n_pages)
    : ref_counts_((size_t)std::max<int32_t>(n_pages, 0), 0), index_(std::max<int32_t>(n_pages, 0)) {
  free_list_.reserve(ref_counts_.size());
  // Pushed in reverse so the first allocations hand out pages 0, 1, 2, ...
  for (int32_t p = n_total() - 1; p >= 0; --p) free_list_.push_back(p);
}

Status PageManager::allocate(int32_t n, std::vector<int32_t>& out) {
  if (n < 0) return InvalidArgument("PageManager::allocate: negative page count");
  if (n > n_free())
    return ResourceExhausted("KV pool exhausted: " + std::to_string(n) + " pages needed, " +
                             std::to_string(n_free()) + " free of " + std::to_string(n_total()));
  out.reserve(out.size() + (size_t)n);
  for (int32_t i = 0; i < n; ++i) {
    int32_t page;
    if (!free_list_.empty()) {
      page = free_list_.back();
      free_list_.pop_back();
    } else {
      PrefixKey key;
      page = index_.evict_lru(&key);  // n <= n_free() guarantees one is parked
      assert(page >= 0);
      ++evicted_;
      if (on_evict_) on_evict_(key, page);
    }
    ref_counts_[page] = 1;
    out.push_back(page);
  }
  return Status::Ok();
}

void PageManager::retain(int32_t page) {
  const bool ok = page >= 0 && page < n_total() && (ref_counts_[page] > 0 || index_.parked(page));
  assert(ok);
  if (!ok) return;
  if (ref_counts_[page] == 0) index_.unpark(page);
  ++ref_counts_[page];
}

void PageManager::release(int32_t page) {
  assert(page >= 0 && page < n_total() && ref_counts_[page] > 0);
  if (page < 0 || page >= n_total() || ref_counts_[page] <= 0) return;  // double free: ignore
  if (--ref_counts_[page] > 0) return;
  if (index_.registered(page)) index_.park(page);
  else free_list_.push_back(page);
}

bool PageManager::release_forget(int32_t page, PrefixKey* key) {
  release(page);
  if (page < 0 || page >= n_total() || !index_.evict(page, key)) return false;
  free_list_.push_back(page);
  return true;
}

bool PageManager::register_page(const PrefixKey& key, int32_t page) {
  if (page < 0 || page >= n_total() || ref_counts_[page] <= 0) return false;
  return index_.insert(key, page);
}

}  // namespace stride
