#include "kv/read_counters.h"

#include "kv/kv_stats.h"

namespace stride {

namespace {

// Plan entries whose page holds a key in the local window (p - window, p] of
// some query p of its block (the window hits behind
// stride_attention_window_pages_read_total); sinks, globals and top-k picks are the rest.
int64_t window_entries(const AttentionPlan& plan, const PolicySpec& policy, int page_size) {
  if (policy.window <= 0) return 0;
  int64_t n = 0;
  for (int b = 0; b < plan.n_blocks(); ++b) {
    const int64_t q_first = plan.q_pos0 + (int64_t)b * plan.q_block;
    const int64_t window_first = q_first - policy.window + 1;
    for (int32_t e = plan.indptr[b]; e < plan.indptr[b + 1]; ++e)
      n += plan.page_first[e] + page_size - 1 >= window_first;
  }
  return n;
}

}  // namespace

void ReadCounters::add(const LayerStepPlan& lp, const PolicySpec& policy) {
  const int64_t read = lp.pages.n_entries();
  const int64_t window_read = window_entries(lp.pages, policy, page_size_);
  std::lock_guard<std::mutex> lock(mu_);
  attention_seconds_[(size_t)policy.kind] += lp.seconds;
  pages_read_by_policy_[(size_t)policy.kind] += lp.pages.per_head() ? (double)read / n_kv_heads_ : (double)read;
  pages_present_by_policy_[(size_t)policy.kind] += (double)lp.pages_present;
  (lp.pages.per_head() ? head_pages_read_ : pages_read_) += read;
  pages_present_ += lp.pages_present;
  (lp.pages.per_head() ? head_window_pages_read_ : window_pages_read_) += window_read;
}

void ReadCounters::add_to(KvStats& st) const {
  std::lock_guard<std::mutex> lock(mu_);
  st.pages_read = pages_read_ + head_pages_read_ / n_kv_heads_;
  st.pages_present = pages_present_;
  st.attention_seconds = attention_seconds_;
  st.pages_read_by_policy = pages_read_by_policy_;
  st.pages_present_by_policy = pages_present_by_policy_;
  st.window_pages_read = window_pages_read_ + head_window_pages_read_ / n_kv_heads_;
}

}  // namespace stride
