#pragma once
// A KV sequence that is removed from its manager on every exit path.
#include "kv/kv_manager.h"

namespace stride {

class ScopedSequence {
 public:
  ScopedSequence(KvManager& kv, KvManager::SeqId id) : kv_(kv), id_(id) {}
  ~ScopedSequence() { kv_.remove_sequence(id_); }
  ScopedSequence(const ScopedSequence&) = delete;
  ScopedSequence& operator=(const ScopedSequence&) = delete;
  KvManager::SeqId id() const { return id_; }

 private:
  KvManager& kv_;
  KvManager::SeqId id_;
};

}  // namespace stride
