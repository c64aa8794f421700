// SessionPages::export_sequence / import_sequence: a sequence's pages copied
// out whole and into a fresh sequence of another manager of the same KV
// shape. Unlike a saved session (session_pages.cpp), the partly written last
// page travels too and the pages go straight into the new sequence's page
// tables, not through the prefix cache: the new sequence is where the
// exporting one stood after its last step, ready for its next token.
#include <algorithm>
#include <string>
#include <vector>

#include "kv/session_pages.h"

#include "kv/page_manager.h"
#include "kv/kv_stats.h"
#include "kv/sequence_table.h"
#include "kv/topk_hot_set.h"
#include "kv/kv_pages_needed.h"
#include "kv/layer_pages.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

Expected<KvSequenceImage> SessionPages::export_sequence(SeqId seq) {
  if (!seqs_.valid(seq)) return InvalidArgument("KV manager: unknown sequence " + std::to_string(seq));
  if (hot_) return Unsupported("KV manager: a sequence with a top-k hot set cannot be exported whole");
  const KvSequence& s = seqs_[seq];
  const int ps = cfg_.page_size;
  KvSequenceImage img;
  img.length = s.length;
  img.page_size = ps;
  img.summary_bytes = summaries_ ? summaries_->page_bytes() : 0;
  const int64_t pool_bytes = pool_.page_image_bytes();
  img.image_bytes = pool_bytes + img.summary_bytes;
  const int64_t n_logical = (s.length + ps - 1) / ps;
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const PageTable& pt = s.layers[(size_t)l].pages;
    for (int64_t L = 0; L < std::min(n_logical, pt.size()); ++L) {
      const int32_t page = pt.table[(size_t)L];
      if (page < 0) continue;
      const size_t at = img.images.size();
      img.images.resize(at + (size_t)img.image_bytes);
      const std::span<uint8_t> image(img.images.data() + at, (size_t)img.image_bytes);
      pool_.save_page(page, image.first((size_t)pool_bytes));
      if (summaries_) summaries_->save_page(page, image.subspan((size_t)pool_bytes));
      img.pages.push_back({l, (int32_t)L});
    }
  }
  return img;
}

Expected<SessionPages::SeqId> SessionPages::import_sequence(const KvSequenceImage& img) {
  if (hot_) return Unsupported("KV manager: a top-k hot set cannot take an imported sequence");
  const int ps = cfg_.page_size;
  const int64_t pool_bytes = pool_.page_image_bytes();
  const int64_t summary_bytes = summaries_ ? summaries_->page_bytes() : 0;
  if (img.page_size != ps || img.image_bytes - img.summary_bytes != pool_bytes)
    return InvalidArgument("KV manager: the imported sequence has another page size or KV layout");
  // Summaries cannot be rebuilt from stored keys: they are made from the f32
  // keys before storage rounds them, and a top-k layer must rank exactly as
  // after its own prefill.
  if (summary_bytes > 0 && img.summary_bytes != summary_bytes)
    return Unsupported("KV manager: the imported sequence has no key summaries for the top-k layers");
  if ((int64_t)img.images.size() != (int64_t)img.pages.size() * img.image_bytes || img.length < 0)
    return InvalidArgument("KV manager: the imported sequence's page list does not match its images");
  const int64_t n_logical = (img.length + ps - 1) / ps;
  // found[l][L]: index into img.pages of layer l's logical page L, or -1.
  std::vector<std::vector<int64_t>> found((size_t)cfg_.n_layer, std::vector<int64_t>((size_t)n_logical, -1));
  for (size_t r = 0; r < img.pages.size(); ++r) {
    const KvSnapshot::PageRef& p = img.pages[r];
    if (p.layer < 0 || p.layer >= cfg_.n_layer || p.page < 0 || p.page >= n_logical)
      return InvalidArgument("KV manager: the imported sequence names a page outside its layers or length");
    found[(size_t)p.layer][(size_t)p.page] = (int64_t)r;
  }
  // The pages each layer's policy still needs for the next query (and the
  // open page, which the next token is written into).
  std::vector<size_t> wanted;  // per (layer, page) in layer order: index into img.pages, or npos for a gap
  constexpr size_t kGap = (size_t)-1;
  int32_t n_alloc = 0;
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t L = 0; L < n_logical; ++L) {
      const bool open_page = L == img.length / ps;
      if (!open_page && !page_needed(cfg_.layer_policies[(size_t)l], ps, L, img.length)) {
        wanted.push_back(kGap);
        continue;
      }
      if (found[(size_t)l][(size_t)L] < 0)
        return InvalidArgument("KV manager: the imported sequence lacks page " + std::to_string(L) + " of layer " +
                               std::to_string(l) + ", which this layer's policy needs");
      wanted.push_back((size_t)found[(size_t)l][(size_t)L]);
      ++n_alloc;
    }
  std::vector<int32_t> fresh;
  STRIDE_RETURN_IF_ERROR(pages_.allocate(n_alloc, fresh));  // all or nothing
  const Expected<SeqId> added = seqs_.add();
  if (!added.ok()) {
    for (const int32_t page : fresh) pages_.release(page);
    return added.status();
  }
  KvSequence& s = seqs_[*added];
  s.length = img.length;
  s.chain_known = false;  // no token ids came with the pages: none of them enters the prefix cache
  size_t next = 0, w = 0;
  for (int l = 0; l < cfg_.n_layer; ++l) {
    PageTable& pt = s.layers[(size_t)l].pages;
    for (int64_t L = 0; L < n_logical; ++L, ++w) {
      if (wanted[w] == kGap) {
        pt.table.push_back(-1);
        continue;
      }
      const int32_t page = fresh[next++];
      const std::span<const uint8_t> image(img.images.data() + wanted[w] * (size_t)img.image_bytes,
                                           (size_t)img.image_bytes);
      pool_.load_page(page, image.first((size_t)pool_bytes));
      if (summaries_) summaries_->load_page(page, image.subspan((size_t)pool_bytes));
      pt.push(page);
    }
    // Settles scan_from as the commits of a prefill would have.
    release_unseen(pt, cfg_.layer_policies[(size_t)l], ps, s.length, pool_, pages_);
  }
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return *added;
}

}  // namespace stride
