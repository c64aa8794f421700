#include "kv/sequence_table.h"

#include <algorithm>
#include <limits>

namespace stride {

Expected<SequenceTable::SeqId> SequenceTable::add() {
  // Reuse the lowest free id; a reused id starts from a clean state.
  SeqId id = 0;
  while (id < (SeqId)seqs_.size() && seqs_[(size_t)id].active) ++id;
  if (id == (SeqId)seqs_.size()) {
    if (seqs_.size() >= (size_t)std::numeric_limits<SeqId>::max())
      return ResourceExhausted("KV manager: too many sequences");
    seqs_.emplace_back();
  }
  KvSequence& s = seqs_[(size_t)id];
  s = KvSequence{};
  s.active = true;
  s.layers.resize((size_t)n_layer_);
  return id;
}

int64_t SequenceTable::capacity(const KvSequence& s) const {
  size_t min_pages = std::numeric_limits<size_t>::max();
  for (const KvLayerState& ls : s.layers) min_pages = std::min(min_pages, ls.pages.table.size());
  return s.layers.empty() ? 0 : (int64_t)min_pages * page_size_;
}

int64_t SequenceTable::pages_held(SeqId seq, int layer) const {
  return valid(seq, layer) ? seqs_[(size_t)seq].layers[(size_t)layer].pages.held : 0;
}

const std::vector<int32_t>* SequenceTable::page_table(SeqId seq, int layer) const {
  return valid(seq, layer) ? &seqs_[(size_t)seq].layers[(size_t)layer].pages.table : nullptr;
}

}  // namespace stride
