// add_sequence_at (a friend of KvManager): a sequence that starts past position 0. Its
// page tables name the pages before first_pos as not held (-1), as a window
// leaves pages it released, so planning, writing, committing and releasing
// work on it unchanged and simply find no keys there.
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

}  // namespace stride
