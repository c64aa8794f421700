#include "kv/layer_pages.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "attention/topk_selector.h"
#include "kv/page_manager.h"
#include "kv/store/kv_pool.h"

namespace stride {

namespace {

// Pages a plan's blocks could read, summed over blocks: held pages holding a
// key at or before the block's last query (causal), so dense reads a share of
// exactly 1 in prefill as in decode.
int64_t visible_held_pages(const PageTable& pt, const AttentionPlan& plan, int page_size) {
  // Blocks end at increasing positions: one running count over the table,
  // and the table's own count once a block sees it all (a decode step's
  // query does: no walk over a long sequence's pages).
  const std::vector<int32_t>& table = pt.table;
  int64_t total = 0, held = 0;
  size_t counted = 0;  // table[0, counted) are in `held`
  for (int b = 0; b < plan.n_blocks(); ++b) {
    const int64_t q_last = plan.q_pos0 + std::min<int64_t>((int64_t)(b + 1) * plan.q_block, plan.n_q) - 1;
    const size_t end = (size_t)std::min<int64_t>((int64_t)table.size(), q_last / page_size + 1);
    if (end == table.size()) {
      held = pt.held;
      counted = end;
    }
    for (; counted < end; ++counted) held += table[counted] >= 0;
    total += held;
  }
  return total;
}

// A query position beyond any real one: keys kept for it are kept forever.
constexpr int64_t kForever = std::numeric_limits<int64_t>::max() / 4;

}  // namespace

void plan_static_layer(const PageTable& pt, const PolicySpec& policy, int page_size, int n_kv_heads, int64_t length,
                       int n_new, bool may_truncate, bool ends_prompt, LayerStepPlan& lp) {
  if (topk_selects(policy, n_new, may_truncate, ends_prompt)) {
    lp.needs_selection = true;  // the lists come from this layer's queries
    return;
  }
  const int64_t kv_len = std::min<int64_t>(length + n_new, pt.size() * page_size);
  lp.pages = plan_attention(policy, pt.table, page_size, kv_len, length, n_new, default_q_block(n_new));
  finish_layer_plan(pt, page_size, n_kv_heads, lp);
#ifndef NDEBUG
  const Status plan_ok = check_plan(lp.pages, policy, page_size, kv_len);
  assert(plan_ok.ok());
#endif
}

void finish_layer_plan(const PageTable& pt, int page_size, int n_kv_heads, LayerStepPlan& lp) {
  lp.pages.work = partition_work(lp.pages, page_size, n_kv_heads);
  lp.pages_present = visible_held_pages(pt, lp.pages, page_size);
}

void release_unseen(PageTable& pt, const PolicySpec& policy, int page_size, int64_t length, const KvPool& pool,
                    PageManager& pages) {
  const int64_t n_full = std::min<int64_t>(length / page_size, pt.size());
  int64_t first_unsettled = -1;
  for (int64_t L = pt.scan_from; L < n_full; ++L) {
    const int32_t page = pt.table[(size_t)L];
    bool settled = true;
    if (page >= 0) {
      const int32_t* pos = pool.positions(page);
      bool kept_now = false, kept_forever = false;
      for (int t = 0; t < page_size && !kept_forever; ++t) {
        kept_now = kept_now || policy_keeps(policy, pos[t], length);
        kept_forever = policy_keeps(policy, pos[t], kForever);
      }
      if (!kept_now) {
        pages.release(page);
        pt.unmap(L);
      } else {
        settled = kept_forever;
      }
    }
    if (!settled && first_unsettled < 0) first_unsettled = L;
  }
  pt.scan_from = first_unsettled >= 0 ? first_unsettled : std::max(pt.scan_from, n_full);
}

}  // namespace stride
