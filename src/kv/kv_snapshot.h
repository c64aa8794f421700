#pragma once
// A sequence's KV pages taken out of the manager (KvManager::sessions().export_prefix)
// and put back later (import_prefix): what a saved session holds. Plain data,
// no tensors of the pool: each page is its image (K, V, int8 scales, every
// slot's position) followed by its top-k key summary when the pool keeps
// summaries, exactly as the offload tier stores it.
#include <cstdint>
#include <vector>

namespace stride {

struct KvSnapshot {
  std::vector<int32_t> tokens;  // the saved prompt; its first n_pages * page_size tokens have pages here
  int32_t page_size = 0;
  int64_t n_pages = 0;          // whole pages of `tokens` the snapshot covers
  int64_t image_bytes = 0;      // bytes of one page below
  struct PageRef {
    int32_t layer = 0;
    int32_t page = 0;  // logical page: tokens [page * page_size, (page + 1) * page_size)
    bool operator==(const PageRef&) const = default;
  };
  // Per layer, the pages its policy keeps for the next query (a windowed
  // layer only its window): the pages a prefix hit of n_pages takes.
  std::vector<PageRef> pages;
  std::vector<uint8_t> images;  // [pages.size(), image_bytes]

  int64_t covered_tokens() const { return n_pages * page_size; }
};

// One sequence's pages taken out whole (KvManager::sessions().export_sequence), its
// partly written last page included, so another manager of the same KV shape
// can start a sequence on them (sessions().import_sequence): a prompt prefilled once
// and decoded under several policies. Pages are images as in KvSnapshot;
// the summaries are there when the exporting pool keeps them.
struct KvSequenceImage {
  int64_t length = 0;           // tokens the sequence holds
  int32_t page_size = 0;
  int64_t image_bytes = 0;      // bytes of one page below: pool image, then summary_bytes
  int64_t summary_bytes = 0;    // 0: the exporting manager kept no key summaries
  std::vector<KvSnapshot::PageRef> pages;  // every (layer, logical page) the sequence held
  std::vector<uint8_t> images;  // [pages.size(), image_bytes]
};

}  // namespace stride
