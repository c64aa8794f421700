#pragma once
// A hook on top-k page selection for tools that explain it (stride eval
// --trace-failures): after a top-k layer has chosen its pages, the observer
// sees the queries, the page table, the key summaries the selector ranked by,
// the pool holding the keys and the plan it made. Unset (the default), the
// KV manager pays one pointer check per selection.
#include <cstdint>
#include <vector>

#include "attention/plan.h"
#include "attention/policy.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

struct SelectionView {
  int layer = 0;
  const PolicySpec* policy = nullptr;
  int64_t q_pos0 = 0;  // position of the first query
  int n_q = 0;
  const float* q = nullptr;  // [n_q, n_head, head_dim] with RoPE
  int n_head = 0;
  int n_kv_heads = 0;
  float scale = 0.f;  // 0: 1/sqrt(head_dim)
  int page_size = 0;
  int64_t kv_len = 0;  // keys visible to the last query
  const std::vector<int32_t>* page_table = nullptr;  // logical -> physical page, < 0 absent
  const PageSummaries* summaries = nullptr;
  const KvPool* pool = nullptr;
  const AttentionPlan* plan = nullptr;  // what the layer reads
};

class SelectionObserver {
 public:
  virtual ~SelectionObserver() = default;
  // Called on the thread that selected; must not keep pointers of the view.
  virtual void on_selection(const SelectionView& view) = 0;
};

}  // namespace stride
