// add_sequence_at (a friend of KvManager): a sequence that starts past position 0. Its
// page tables name the pages before first_pos as not held (-1), as a window
// leaves pages it released, so planning, writing, committing and releasing
// work on it unchanged and simply find no keys there.
//
// With the prompt's ids a shard takes part in the prefix cache as a whole
// sequence does: keys chain from position 0 (every rank has the whole
// prompt), so a page is found only under the exact tokens before it; the
// shard looks up and registers its own pages only.
#include <algorithm>
#include <string>

#include "kv/kv_manager.h"

namespace stride {

Expected<KvManager::SeqId> add_sequence_at(KvManager& kv, int64_t first_pos) {
  const int ps = kv.cfg_.page_size;
  if (first_pos < 0 || first_pos % ps != 0)
    return InvalidArgument("KV manager: a sequence may start at a multiple of the page size (" + std::to_string(ps) +
                           "), not at " + std::to_string(first_pos));
  if (kv.hot_) return Unsupported("KV manager: a top-k hot set keeps whole sequences, not shards");
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId id, kv.seqs_.add());
  KvSequence& s = kv.seqs_[id];
  s.length = first_pos;
  s.chain_known = false;  // prefix-cache keys chain from position 0
  for (KvLayerState& ls : s.layers) {
    ls.pages.table.assign((size_t)(first_pos / ps), -1);
    ls.pages.scan_from = first_pos / ps;  // nothing before it to release
  }
  return id;
}

int64_t cached_shard_end(KvManager& kv, std::span<const int32_t> prompt, int64_t first_pos, int64_t end_pos) {
  const int ps = kv.cfg_.page_size;
  const int64_t n = (int64_t)prompt.size();
  // The shared tier's keys chain from a sequence's first page, which a shard does not hold.
  if (!kv.cfg_.prefix_cache || kv.shared_ || kv.hot_ || first_pos % ps != 0 || end_pos > n || n < 1) return first_pos;
  kv.prefix_.count_query(end_pos - first_pos);
  const int64_t first_page = first_pos / ps;
  // The last prompt token is always computed: its logits are needed.
  const int64_t max_pages = std::min(end_pos, n - 1) / ps;
  if (max_pages <= first_page) return first_pos;
  const std::vector<uint64_t> chains = kv.prefix_.shard_chains(prompt, 0, max_pages);
  for (int64_t p = max_pages; p > first_page; --p)
    if (kv.prefix_.run_usable(chains, first_page, p)) return p * ps;
  return first_pos;
}

Expected<KvManager::SeqId> add_sequence_at(KvManager& kv, int64_t first_pos, std::span<const int32_t> prompt,
                                           int64_t reuse_end) {
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId id, add_sequence_at(kv, first_pos));
  if (!kv.cfg_.prefix_cache || kv.shared_) return id;
  const int ps = kv.cfg_.page_size;
  if (reuse_end < first_pos || reuse_end % ps != 0 || reuse_end > (int64_t)prompt.size()) {
    kv.seqs_.reset(id);
    return InvalidArgument("KV manager: a shard from " + std::to_string(first_pos) + " cannot reuse up to " +
                           std::to_string(reuse_end));
  }
  const int64_t first_page = first_pos / ps;
  const std::vector<uint64_t> chains = kv.prefix_.shard_chains(prompt, first_page, reuse_end / ps);
  KvSequence& s = kv.seqs_[id];
  if (const Status st = kv.prefix_.take_run(s, chains, first_page, reuse_end / ps); !st.ok()) {
    kv.seqs_.reset(id);
    return st;
  }
  s.chain_known = true;
  kv.counters_.peak_pages_used = std::max<int64_t>(kv.counters_.peak_pages_used, kv.pages_.n_used());
  return id;
}

}  // namespace stride
