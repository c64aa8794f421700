// KvManager::fork_sequence: a second sequence on the pages of a first.
// Full pages are read-only once written (a sequence only ever writes at its
// end), so both sequences may reference them; the open page is written by
// both next, so each gets its own copy. With a top-k hot set the pages the
// parent moved to the tier are copied into owned slots of the child's
// (TopkHotSet::fork_layer): a slot belongs to one sequence.
#include <algorithm>
#include <string>
#include <vector>

#include "kv/kv_manager.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

Expected<KvManager::SeqId> KvManager::fork_sequence(SeqId parent) {
  if (!seqs_.valid(parent)) return InvalidArgument("KV manager: unknown sequence " + std::to_string(parent));
  const int64_t length = seqs_[parent].length;
  const int ps = cfg_.page_size;
  // The partly written page, when there is one: logical page length / ps.
  const int64_t open_page = length % ps != 0 ? length / ps : -1;
  int32_t n_copies = 0;
  for (const KvLayerState& ls : seqs_[parent].layers)
    if (open_page >= 0 && open_page < ls.pages.size() && ls.pages.table[(size_t)open_page] >= 0) ++n_copies;
  std::vector<int32_t> copies;
  STRIDE_RETURN_IF_ERROR(pages_.allocate(n_copies, copies));  // all or nothing
  std::vector<HotSetLayer> hot_layers(hot_ ? seqs_[parent].layers.size() : 0);
  auto undo = [&](const Status& why) {
    for (HotSetLayer& hs : hot_layers) hot_->drop_tier(hs);
    for (const int32_t page : copies) pages_.release(page);
    return why;
  };
  for (size_t l = 0; l < hot_layers.size(); ++l) {
    const KvLayerState& ls = seqs_[parent].layers[l];
    if (const Status st = hot_->fork_layer(ls.pages, ls.hot, hot_layers[l]); !st.ok()) return undo(st);
  }
  const Expected<SeqId> added = seqs_.add();
  if (!added.ok()) return undo(added.status());
  const SeqId child = *added;
  const KvSequence& from = seqs_[parent];  // add() may have grown the table: take the reference after it
  KvSequence& to = seqs_[child];
  to.length = from.length;
  to.chain_known = from.chain_known;
  to.chain = from.chain;
  to.hashed_pages = from.hashed_pages;
  to.open_ids = from.open_ids;
  to.shared_chain = from.shared_chain;
  std::vector<uint8_t> image((size_t)pool_->page_image_bytes());
  std::vector<uint8_t> summary(summaries_ ? (size_t)summaries_->page_bytes() : 0);
  size_t next_copy = 0;
  for (size_t l = 0; l < from.layers.size(); ++l) {
    const PageTable& src = from.layers[l].pages;
    PageTable& dst = to.layers[l].pages;
    dst.scan_from = src.scan_from;
    if (hot_) to.layers[l].hot = std::move(hot_layers[l]);
    const int64_t n_logical = std::min<int64_t>(src.size(), (length + ps - 1) / ps);
    for (int64_t L = 0; L < n_logical; ++L) {
      const int32_t page = src.table[(size_t)L];
      if (page < 0) {
        dst.table.push_back(-1);
      } else if (L == open_page) {
        const int32_t copy = copies[next_copy++];
        pool_->save_page(page, image);
        pool_->load_page(copy, image);
        if (summaries_) {
          summaries_->save_page(page, summary);
          summaries_->load_page(copy, summary);
        }
        dst.push(copy);
        ++counters_.fork_pages_copied;
      } else {
        pages_.retain(page);
        dst.push(page);
        ++counters_.fork_pages_shared;
      }
    }
  }
  ++counters_.forks;
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return child;
}

}  // namespace stride
