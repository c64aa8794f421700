// Rolling KV state back (speculative decoding): the rejected tail of a
// verification step, cut inside commit() before anything is released or
// cached, and truncate() for a draft model's own sequence. Either way the
// state afterwards is the one a run without the cut tokens would have:
// the same length, page tables, prefix chain and top-k summaries; slots
// past the length keep stale keys that the next write overwrites and no
// plan reads (page_valid stops at the length).
#include <algorithm>
#include <string>

#include "kv/kv_manager.h"

namespace stride {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

// Called by write() for the first run of a may_truncate step on a top-k
// layer, before the summaries change: the first page's summary (when the
// step starts inside a page) and every key of the step, so that commit()
// can rebuild the summaries from the kept keys alone, in the same order a
// run without the tail folds them.
void KvManager::stash_for_rollback(StepPlan& plan, int i, int layer, const float* k) {
  SeqStepPlan& sp = plan.seqs[(size_t)i];
  LayerStepPlan& lp = sp.layers[(size_t)layer];
  const int64_t k_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_k;
  lp.new_keys.assign(k, k + sp.n_new * k_row);
  lp.summary_before.clear();
  if (sp.pos0 % cfg_.page_size == 0) return;
  const int32_t page = seqs_[sp.seq].layers[layer].pages.table[(size_t)(sp.pos0 / cfg_.page_size)];
  const float* first = summaries_->min(page, 0);
  lp.summary_before.assign(first, first + (size_t)summaries_->page_bytes() / sizeof(float));
}

void KvManager::drop_pages_from(Sequence& s, int64_t first_logical) {
  for (LayerState& ls : s.layers) {
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

void KvManager::drop_step_tail(Sequence& s, const SeqStepPlan& sp, int kept) {
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

Status KvManager::truncate(SeqId seq, int64_t length) {
  if (!valid(seq)) return InvalidArgument("KV manager: unknown sequence " + std::to_string(seq));
  Sequence& s = seqs_[seq];
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
      if (pt.table[(size_t)L] < 0 && !in_tier && (open_page || page_needed(l, L, length)))
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
