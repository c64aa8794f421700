#include "kv/step_rollback.h"

#include <algorithm>
#include <string>

#include "kv/kv_pages_needed.h"
#include "kv/page_manager.h"
#include "kv/store/page_summary.h"
#include "kv/topk_hot_set.h"

namespace stride {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

void StepRollback::stash(const KvSequence& s, int64_t pos0, int n, LayerStepPlan& lp, int layer,
                         const float* k) const {
  const int64_t k_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_k;
  lp.new_keys.assign(k, k + n * k_row);
  lp.summary_before.clear();
  if (pos0 % cfg_.page_size == 0) return;
  const int32_t page = s.layers[(size_t)layer].pages.table[(size_t)(pos0 / cfg_.page_size)];
  const float* first = summaries_->min(page, 0);
  lp.summary_before.assign(first, first + (size_t)summaries_->page_bytes() / sizeof(float));
}

void StepRollback::drop_pages_from(KvSequence& s, int64_t first_logical) {
  for (KvLayerState& ls : s.layers) {
    PageTable& pt = ls.pages;
    for (size_t L = pt.table.size(); L-- > (size_t)first_logical;) {
      if (pt.table[L] >= 0) {
        pages_.release(pt.table[L]);
        --pt.held;
      }
    }
    // Cut pages with an owned tier slot (in the tier, or back in the pool
    // with it) give it up.
    if (hot_) hot_->drop_pages_from(pt, ls.hot, first_logical);
    if (pt.size() > first_logical) pt.table.resize((size_t)first_logical);
    pt.scan_from = std::min(pt.scan_from, first_logical);
  }
}

void StepRollback::drop_step_tail(KvSequence& s, const SeqStepPlan& sp, int kept) {
  const int ps = cfg_.page_size;
  const int64_t end = sp.pos0 + kept;
  // Pages that only the dropped tokens reached go back to the pool: the
  // tables are as long as a run of `end` tokens made them.
  drop_pages_from(s, ceil_div(end, ps));
  if (!summaries_) return;
  const int64_t k_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_k;
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const LayerStepPlan& lp = sp.layers[(size_t)l];
    if (cfg_.layer_policies[l].kind != PolicyKind::TopK || lp.new_keys.empty()) continue;
    const PageTable& pt = s.layers[l].pages;
    // Only the last kept page can hold a dropped key; a page the tail
    // reached alone was dropped above.
    if (end % ps == 0) continue;
    const int64_t L = end / ps;
    const int32_t page = L < pt.size() ? pt.table[(size_t)L] : -1;
    if (page < 0) continue;
    const int64_t page_first = L * ps;
    if (page_first < sp.pos0) {
      summaries_->load_page(page, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(lp.summary_before.data()),
                                                           lp.summary_before.size() * sizeof(float)));
    }
    const int64_t from = std::max(page_first, sp.pos0);
    summaries_->update(page, (int)(from - page_first), (int)(end - from),
                       lp.new_keys.data() + (from - sp.pos0) * k_row, k_row);
  }
}

Status StepRollback::truncate(KvSequence& s, int64_t length) {
  if (length < 0 || length > s.length)
    return InvalidArgument("KV manager: cannot truncate a sequence of " + std::to_string(s.length) + " tokens to " +
                           std::to_string(length));
  if (length == s.length) return Status::Ok();
  const int ps = cfg_.page_size;
  if (cfg_.prefix_cache && s.chain_known && s.hashed_pages * ps > length)
    return Unsupported("KV manager: pages past the cut are in the prefix cache");
  const int64_t n_keep = ceil_div(length, ps);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const PageTable& pt = s.layers[l].pages;
    if (cfg_.layer_policies[l].kind == PolicyKind::TopK && length % ps != 0)
      return Unsupported("KV manager: a top-k page summary would cover cut keys");
    for (int64_t L = 0; L < n_keep && L < pt.size(); ++L) {
      const bool open_page = L == length / ps;  // new keys will be written into it
      const bool in_tier = s.layers[l].hot.has_slot(L);
      if (pt.table[(size_t)L] < 0 && !in_tier && (open_page || page_needed(cfg_.layer_policies[(size_t)l], ps, L, length)))
        return Unsupported("KV manager: layer " + std::to_string(l) +
                                  " released a page the shorter sequence needs");
    }
  }
  drop_pages_from(s, n_keep);
  s.length = length;
  if (s.chain_known && cfg_.prefix_cache)
    s.open_ids.resize((size_t)(length - s.hashed_pages * ps));
  return Status::Ok();
}

}  // namespace stride
