#pragma once
// What committed steps read: pages read and present per query block, the
// window's share, and attention time, by the layer's policy kind. commit()
// adds each layer plan; stats() may read them from another thread.
#include <array>
#include <cstdint>
#include <mutex>

#include "attention/policy.h"
#include "kv/step_plan.h"

namespace stride {

struct KvStats;

class ReadCounters {
 public:
  ReadCounters(int page_size, int n_kv_heads) : page_size_(page_size), n_kv_heads_(n_kv_heads) {}

  void add(const LayerStepPlan& lp, const PolicySpec& policy);
  // pages_read, pages_present, window_pages_read and the per-policy arrays.
  void add_to(KvStats& st) const;

 private:
  int page_size_, n_kv_heads_;
  mutable std::mutex mu_;
  int64_t pages_read_ = 0;
  int64_t head_pages_read_ = 0;  // per-kv-head (top-k) lists: entries / n_kv_heads pages
  int64_t pages_present_ = 0;
  std::array<double, kPolicyKinds> attention_seconds_{};
  std::array<double, kPolicyKinds> pages_read_by_policy_{}, pages_present_by_policy_{};
  int64_t window_pages_read_ = 0;  // same split as pages_read_ / head_pages_read_
  int64_t head_window_pages_read_ = 0;
};

}  // namespace stride
