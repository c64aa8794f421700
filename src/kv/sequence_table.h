#pragma once
// The KV manager's sequences: each one's length, its page tables (one per
// layer: windowed layers release pages while dense ones keep theirs), its
// top-k hot-set state and where its prefix chain stands. Ids are small
// integers, reused lowest first. The other parts work on a KvSequence they
// are handed; only this table adds and forgets them.
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "kv/page_table.h"
#include "kv/prefix_index.h"
#include "kv/shared/shared_page_codec.h"
#include "kv/topk_hot_set.h"

namespace stride {

// A layer of a sequence: its page table, which every part works on, and its
// top-k hot-set state, which only TopkHotSet touches.
struct KvLayerState {
  PageTable pages;
  HotSetLayer hot;
};

struct KvSequence {
  bool active = false;
  int64_t length = 0;  // tokens committed
  std::vector<KvLayerState> layers;  // [n_layer]
  // Prefix chain: the PrefixChains id of the first hashed_pages full
  // pages, and the ids of the tokens after them (the open page).
  bool chain_known = true;  // false once a commit came without token ids
  uint64_t chain = kPrefixChainRoot;
  int64_t hashed_pages = 0;
  std::vector<int32_t> open_ids;
  PageDigest shared_chain{};  // shared-tier key of the first hashed_pages pages
};

class SequenceTable {
 public:
  using SeqId = int32_t;
  SequenceTable(int n_layer, int page_size) : n_layer_(n_layer), page_size_(page_size) {}

  // A fresh sequence under the lowest free id.
  Expected<SeqId> add();
  // Forgets seq (its pages must be released already); the id is free again.
  void reset(SeqId seq) { seqs_[(size_t)seq] = KvSequence{}; }
  bool valid(SeqId seq) const { return seq >= 0 && seq < (SeqId)seqs_.size() && seqs_[(size_t)seq].active; }
  bool valid(SeqId seq, int layer) const { return valid(seq) && layer >= 0 && layer < n_layer_; }
  KvSequence& operator[](SeqId seq) { return seqs_[(size_t)seq]; }
  const KvSequence& operator[](SeqId seq) const { return seqs_[(size_t)seq]; }

  // Tokens every layer of s has pages for.
  int64_t capacity(const KvSequence& s) const;
  int64_t pages_held(SeqId seq, int layer) const;
  const std::vector<int32_t>* page_table(SeqId seq, int layer) const;

 private:
  int n_layer_, page_size_;
  std::vector<KvSequence> seqs_;  // indexed by SeqId; inactive entries are free ids
};

}  // namespace stride
