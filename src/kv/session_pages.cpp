#include "kv/session_pages.h"

#include <algorithm>
#include <cstring>

#include "kv/kv_pages_needed.h"
#include "kv/offload_tier.h"
#include "kv/page_manager.h"
#include "kv/prefix_chains.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

namespace {

// The query positions a prefix hit on these pages can start at: after all of
// them, and one page earlier when the prompt ends on a page boundary (a
// prompt equal to the saved one keeps its last token to compute).
std::vector<int64_t> hit_starts(int64_t n_tokens, int64_t n_pages, int page_size) {
  std::vector<int64_t> starts{n_pages * page_size};
  if (n_tokens == n_pages * page_size && n_pages > 1) starts.push_back((n_pages - 1) * page_size);
  return starts;
}

}  // namespace

int64_t SessionPages::page_bytes() const {
  return pool_.page_image_bytes() + (summaries_ ? summaries_->page_bytes() : 0);
}

Expected<KvSnapshot> SessionPages::export_prefix(std::span<const int32_t> tokens) {
  if (!cfg_.prefix_cache) return Unsupported("saving a session needs the prefix cache (cache_reuse)");
  const int ps = cfg_.page_size;
  KvSnapshot snap;
  snap.tokens.assign(tokens.begin(), tokens.end());
  snap.page_size = ps;
  snap.n_pages = (int64_t)tokens.size() / ps;
  snap.image_bytes = page_bytes();
  std::vector<uint64_t> chains((size_t)snap.n_pages);
  uint64_t chain = kPrefixChainRoot;
  for (int64_t i = 0; i < snap.n_pages; ++i) {
    chain = chains_.find(chain, tokens.subspan((size_t)(i * ps), (size_t)ps));
    if (chain == kNoPrefixChain) return NotFound("the session's pages are no longer in the prefix cache");
    chains[(size_t)i] = chain;
  }
  const std::vector<int64_t> starts = hit_starts((int64_t)tokens.size(), snap.n_pages, ps);
  const int64_t image_bytes = pool_.page_image_bytes();
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = 0; i < snap.n_pages; ++i) {
      const bool needed = std::any_of(starts.begin(), starts.end(), [&](int64_t q) { return page_needed(cfg_.layer_policies[(size_t)l], ps, i, q); });
      if (!needed) continue;
      const PrefixKey key{chains[(size_t)i], l};
      const size_t at = snap.images.size();
      snap.images.resize(at + (size_t)snap.image_bytes);
      const std::span<uint8_t> image(snap.images.data() + at, (size_t)snap.image_bytes);
      if (const int32_t page = pages_.lookup(key); page >= 0) {
        pool_.save_page(page, image.first((size_t)image_bytes));
        if (summaries_) summaries_->save_page(page, image.subspan((size_t)image_bytes));
      } else if (std::optional<PinnedPage> slot = offload_.pin(key)) {
        const std::span<const uint8_t> bytes = slot->bytes();
        if ((int64_t)bytes.size() < snap.image_bytes) return Internal("offload tier slot smaller than a page image");
        std::memcpy(image.data(), bytes.data(), (size_t)snap.image_bytes);
      } else {
        return NotFound("page " + std::to_string(i) + " of layer " + std::to_string(l) +
                        " of the session was evicted before it could be saved (KV pool too small)");
      }
      snap.pages.push_back({l, (int32_t)i});
    }
  return snap;
}

Expected<int64_t> SessionPages::import_prefix(const KvSnapshot& snap) {
  if (!cfg_.prefix_cache) return int64_t{0};
  const int ps = cfg_.page_size;
  if (snap.page_size != ps) return InvalidArgument("the session was saved with another KV page size");
  if (snap.image_bytes != page_bytes()) return InvalidArgument("the session's page images have another size");
  if (snap.n_pages < 0 || snap.n_pages > (int64_t)snap.tokens.size() / ps ||
      (int64_t)snap.images.size() != (int64_t)snap.pages.size() * snap.image_bytes)
    return InvalidArgument("the session's page list does not match its tokens");
  for (const KvSnapshot::PageRef& r : snap.pages)
    if (r.layer < 0 || r.layer >= cfg_.n_layer || r.page < 0 || r.page >= snap.n_pages)
      return InvalidArgument("the session names a page outside its layers or tokens");
  std::vector<uint64_t> chains((size_t)snap.n_pages);
  uint64_t chain = kPrefixChainRoot;
  for (int64_t i = 0; i < snap.n_pages; ++i) {
    chain = chains_.intern(chain, std::span<const int32_t>(snap.tokens.data() + i * ps, (size_t)ps));
    chains[(size_t)i] = chain;
  }
  // Cached pages are retained while the missing ones are allocated, so the
  // allocation cannot evict them.
  std::vector<int32_t> held;
  std::vector<size_t> missing;  // indices into snap.pages
  for (size_t r = 0; r < snap.pages.size(); ++r) {
    const PrefixKey key{chains[(size_t)snap.pages[r].page], snap.pages[r].layer};
    if (const int32_t page = pages_.lookup(key); page >= 0) {
      pages_.retain(page);
      held.push_back(page);
    } else if (!offload_.contains(key)) {
      missing.push_back(r);
    }
  }
  std::vector<int32_t> fresh;
  const Status got = pages_.allocate((int32_t)missing.size(), fresh);
  if (got.ok()) {
    const int64_t image_bytes = pool_.page_image_bytes();
    for (size_t m = 0; m < missing.size(); ++m) {
      const KvSnapshot::PageRef& r = snap.pages[missing[m]];
      const std::span<const uint8_t> image(snap.images.data() + missing[m] * (size_t)snap.image_bytes,
                                           (size_t)snap.image_bytes);
      pool_.load_page(fresh[m], image.first((size_t)image_bytes));
      if (summaries_) summaries_->load_page(fresh[m], image.subspan((size_t)image_bytes));
      // A duplicate entry keeps the first registration; its page is freed below.
      pages_.register_page({chains[(size_t)r.page], r.layer}, fresh[m]);
    }
  }
  for (const int32_t page : held) pages_.release(page);
  for (const int32_t page : fresh) pages_.release(page);  // registered: parked in the cache
  if (!got.ok())
    return ResourceExhausted("the KV pool cannot hold the session's " + std::to_string(missing.size()) +
                             " pages: " + got.message());
  return (int64_t)missing.size();
}

}  // namespace stride
