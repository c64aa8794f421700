#pragma once
// Attaches a selection observer to a KV manager for one run and detaches it
// however the run ends.
#include "kv/kv_manager.h"
#include "kv/selection_observer.h"

namespace stride {

class ObserverScope {
 public:
  ObserverScope(KvManager& kv, SelectionObserver* observer) : kv_(kv) { kv_.set_selection_observer(observer); }
  ~ObserverScope() { kv_.set_selection_observer(nullptr); }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  KvManager& kv_;
};

}  // namespace stride
