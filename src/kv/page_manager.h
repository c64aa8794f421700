#pragma once
// Pure bookkeeping for the paged KV pool: a free list, reference counts and
// the prefix cache (PrefixIndex). It holds no tensors, so it is tested on its
// own. A page is in one of three states:
//   free       on the free list
//   used       referenced by at least one sequence (ref count > 0)
//   cached     unreferenced but registered under a prefix key; reclaimable:
//              allocate() evicts such pages, least recently released first,
//              once the free list is empty. An eviction hook (set_on_evict)
//              sees each evicted page before it is handed out again, so its
//              contents can be offloaded first.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "kv/prefix_index.h"

namespace stride {

class PageManager {
 public:
  explicit PageManager(int32_t n_pages);

  // All-or-nothing: either n pages are appended to `out` (ref count 1 each)
  // or ResourceExhausted is returned and nothing changes. Cached pages are
  // evicted (dropped from the prefix index) only when the free list runs short.
  Status allocate(int32_t n, std::vector<int32_t>& out);
  // One more reference; revives a cached page that no sequence referenced.
  void retain(int32_t page);
  // One fewer; at zero a registered page stays cached, any other is freed.
  void release(int32_t page);
  // release(), but a registered page losing its last reference leaves the
  // prefix index and is freed now instead of parked; true, with its key in
  // *key, when that happened. No eviction hook: the caller keeps the
  // contents elsewhere (the top-k hot set moves them to the offload tier).
  bool release_forget(int32_t page, PrefixKey* key);

  // Prefix cache. Registers a referenced page under `key`; false when the key
  // or the page is registered already (the first registration wins).
  bool register_page(const PrefixKey& key, int32_t page);
  int32_t lookup(const PrefixKey& key) const { return index_.find(key); }  // page or -1
  // Called by allocate() for every cached page it evicts, before the page is
  // handed out (its contents are still intact).
  using EvictHook = std::function<void(const PrefixKey& key, int32_t page)>;
  void set_on_evict(EvictHook hook) { on_evict_ = std::move(hook); }

  int32_t n_total() const { return (int32_t)ref_counts_.size(); }
  // Pages allocate() can hand out: free plus cached-unreferenced.
  int32_t n_free() const { return (int32_t)free_list_.size() + index_.n_parked(); }
  int32_t n_used() const { return n_total() - n_free(); }  // referenced
  int32_t n_cached() const { return index_.n_registered(); }  // registered, referenced or not
  int32_t n_reclaimable() const { return index_.n_parked(); }
  int64_t n_evicted() const { return evicted_; }
  int32_t ref_count(int32_t page) const { return ref_counts_[page]; }
  bool cached(int32_t page) const { return index_.registered(page); }

 private:
  std::vector<int32_t> free_list_;   // LIFO: recently freed pages are warm in cache
  std::vector<int32_t> ref_counts_;  // [n_pages]
  PrefixIndex index_;
  int64_t evicted_ = 0;
  EvictHook on_evict_;
};

}  // namespace stride
