// The step of the KV manager: prepare (reserve and plan), write, select
// (top-k), commit (advance, cache, release). See kv_manager.h.
#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

#include "attention/topk_selector.h"
#include "kv/kv_manager.h"

namespace stride {

namespace {

// Pages a plan's blocks could read, summed over blocks: held pages holding a
// key at or before the block's last query (causal), so dense reads a share of
// exactly 1 in prefill as in decode.
int64_t visible_held_pages(const std::vector<int32_t>& table, const AttentionPlan& plan, int page_size) {
  // Blocks end at increasing positions: one running count over the table.
  int64_t total = 0, held = 0;
  size_t counted = 0;  // table[0, counted) are in `held`
  for (int b = 0; b < plan.n_blocks(); ++b) {
    const int64_t q_last = plan.q_pos0 + std::min<int64_t>((int64_t)(b + 1) * plan.q_block, plan.n_q) - 1;
    const size_t end = (size_t)std::min<int64_t>((int64_t)table.size(), q_last / page_size + 1);
    for (; counted < end; ++counted) held += table[counted] >= 0;
    total += held;
  }
  return total;
}

// A query position beyond any real one: keys kept for it are kept forever.
constexpr int64_t kForever = std::numeric_limits<int64_t>::max() / 4;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

StepPlan::StepPlan(StepPlan&& o) noexcept : seqs(std::move(o.seqs)), owner_(o.owner_) { o.owner_ = nullptr; }

StepPlan& StepPlan::operator=(StepPlan&& o) noexcept {
  if (this != &o) {
    release_spares();
    seqs = std::move(o.seqs);
    owner_ = o.owner_;
    o.owner_ = nullptr;
  }
  return *this;
}

StepPlan::~StepPlan() { release_spares(); }

void StepPlan::release_spares() {
  if (owner_) owner_->return_spares(*this);
  owner_ = nullptr;
}

int64_t KvManager::spare_pages_for(const Sequence& s, int layer, int n_new, bool tier_may_refuse) const {
  const PolicySpec& p = cfg_.layer_policies[layer];
  if (!topk_hot_set(p)) return 0;
  const LayerState& ls = s.layers[layer];
  return hot_->spare_bound(p, ls.pages, ls.hot, s.length, n_new, tier_may_refuse);
}

// Whether the hot set's tier may refuse a move this step. Decided for the
// whole batch: at most every page its hot-set layers hold could need a slot.
bool KvManager::tier_may_refuse(std::span<const StepRequest> batch) const {
  if (!hot_) return false;
  int64_t could_need = 0;
  for (const StepRequest& r : batch) {
    const Sequence& s = seqs_[r.seq];
    for (int l = 0; l < cfg_.n_layer; ++l)
      if (topk_hot_set(cfg_.layer_policies[l]))
        could_need += hot_->held_after_reserve(s.layers[l].pages, s.length, r.n_new);
  }
  return hot_->tier_may_refuse(could_need);
}

// New pages for n_new more tokens on every layer, and the hot-set spares.
int64_t KvManager::step_pages(const Sequence& s, int n_new, bool tier_may_refuse) const {
  const int64_t n_logical = ceil_div(s.length + n_new, cfg_.page_size);
  int64_t total = 0;
  for (int l = 0; l < cfg_.n_layer; ++l)
    total += std::max<int64_t>(0, n_logical - s.layers[l].pages.size()) +
             spare_pages_for(s, l, n_new, tier_may_refuse);
  return total;
}

int64_t KvManager::pages_to_reserve(SeqId seq, int n_new) const {
  if (!valid(seq) || n_new <= 0) return 0;
  const StepRequest r{seq, n_new, nullptr};
  return step_pages(seqs_[seq], n_new, tier_may_refuse(std::span<const StepRequest>(&r, 1)));
}

Status KvManager::check_batch(std::span<const StepRequest> batch) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const StepRequest& r = batch[i];
    if (!valid(r.seq)) return InvalidArgument("KV manager: unknown sequence " + std::to_string(r.seq));
    if (r.n_new <= 0) return InvalidArgument("KV manager: a step request has no tokens");
    if (seqs_[r.seq].length + r.n_new > std::numeric_limits<int32_t>::max())
      return InvalidArgument("KV manager: positions beyond int32 range");
    for (size_t j = 0; j < i; ++j)
      if (batch[j].seq == r.seq) return InvalidArgument("KV manager: sequence " + std::to_string(r.seq) + " twice in one step");
  }
  return Status::Ok();
}

void KvManager::plan_static_layer(const Sequence& s, int layer, SeqStepPlan& sp) const {
  const PageTable& pt = s.layers[layer].pages;
  const PolicySpec& policy = cfg_.layer_policies[layer];
  LayerStepPlan& lp = sp.layers[layer];
  if (topk_selects(policy, sp.n_new, sp.may_truncate)) {
    lp.needs_selection = true;  // the lists come from this layer's queries
    return;
  }
  const int64_t kv_len = std::min<int64_t>(s.length + sp.n_new, pt.size() * cfg_.page_size);
  lp.pages = plan_attention(policy, pt.table, cfg_.page_size, kv_len, s.length, sp.n_new, default_q_block(sp.n_new));
  lp.pages.work = partition_work(lp.pages, cfg_.page_size, cfg_.n_kv_heads);
  lp.pages_present = visible_held_pages(pt.table, lp.pages, cfg_.page_size);
#ifndef NDEBUG
  const Status plan_ok = check_plan(lp.pages, policy, cfg_.page_size, kv_len);
  assert(plan_ok.ok());
#endif
}

Expected<StepPlan> KvManager::prepare(std::span<const StepRequest> batch, std::vector<int>* unfit) {
  if (unfit) unfit->clear();
  STRIDE_RETURN_IF_ERROR(check_batch(batch));
  // The tier's room is shared by the batch, so whether it may refuse a move is decided once.
  const bool refuse = tier_may_refuse(batch);
  std::vector<int64_t> need(batch.size());
  int64_t total = 0;
  for (size_t i = 0; i < batch.size(); ++i) total += need[i] = step_pages(seqs_[batch[i].seq], batch[i].n_new, refuse);
  const int64_t free_pages = pages_.n_free();
  if (total > free_pages) {
    std::string names;
    int64_t kept = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (kept + need[i] <= free_pages) {
        kept += need[i];
        continue;
      }
      if (unfit) unfit->push_back((int)i);
      names += (names.empty() ? "" : ", ") + std::to_string(batch[i].seq) + " (" + std::to_string(need[i]) + " pages)";
    }
    return ResourceExhausted("KV pool exhausted: the step needs " + std::to_string(total) + " more pages, " +
                             std::to_string(free_pages) + " free of " + std::to_string(pages_.n_total()) +
                             "; sequences that do not fit: " + names);
  }
  std::vector<int32_t> got;
  STRIDE_RETURN_IF_ERROR(pages_.allocate((int32_t)total, got));  // all or nothing
  StepPlan plan;
  plan.owner_ = this;
  plan.seqs.resize(batch.size());
  size_t next = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence& s = seqs_[batch[i].seq];
    SeqStepPlan& sp = plan.seqs[i];
    sp.seq = batch[i].seq;
    sp.n_new = batch[i].n_new;
    sp.pos0 = s.length;
    sp.tokens = batch[i].tokens;
    sp.may_truncate = batch[i].may_truncate;
    sp.layers.resize((size_t)cfg_.n_layer);
    const int64_t n_logical = ceil_div(s.length + sp.n_new, cfg_.page_size);
    for (int l = 0; l < cfg_.n_layer; ++l) {
      // Spares first: their count reads the layer before this step's pages join it.
      const int64_t spares = spare_pages_for(s, l, sp.n_new, refuse);
      for (int64_t k = 0; k < spares; ++k) sp.layers[(size_t)l].spare_pages.push_back(got[next++]);
      PageTable& pt = s.layers[l].pages;
      while (pt.size() < n_logical) pt.push(got[next++]);
    }
    for (int l = 0; l < cfg_.n_layer; ++l) plan_static_layer(s, l, sp);
  }
  assert(next == got.size());
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return plan;
}

Status KvManager::write(StepPlan& plan, int i, int layer, const float* k, const float* v) {
  if (plan.owner_ != this || i < 0 || i >= (int)plan.seqs.size() || layer < 0 || layer >= cfg_.n_layer)
    return InvalidArgument("KV manager: write outside the step plan");
  const SeqStepPlan& sp = plan.seqs[(size_t)i];
  if (!valid(sp.seq) || seqs_[sp.seq].length != sp.pos0)
    return InvalidArgument("KV manager: write for a sequence that changed since prepare()");
  const PageTable& pt = seqs_[sp.seq].layers[layer].pages;
  const int ps = cfg_.page_size;
  if (sp.pos0 + sp.n_new > pt.size() * ps)
    return Internal("KV manager: write beyond the pages prepare() reserved");
  const int64_t k_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_k;
  const int64_t v_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_v;
  const bool summarize = summaries_ && cfg_.layer_policies[layer].kind == PolicyKind::TopK;
  for (int t = 0; t < sp.n_new;) {
    const int64_t pos = sp.pos0 + t;
    const int slot = (int)(pos % ps);
    const int run = std::min(sp.n_new - t, ps - slot);  // tokens that land in this page
    const int32_t page = pt.table[(size_t)(pos / ps)];
    if (page < 0) return Internal("KV manager: write into a released page");
    pool_->store(page, slot, run, k + t * k_row, k_row, v + t * v_row, v_row, pos);
    if (summarize) {
      if (t == 0 && sp.may_truncate) stash_for_rollback(plan, i, layer, k);
      summaries_->update(page, slot, run, k + t * k_row, k_row);
    }
    t += run;
  }
  return Status::Ok();
}

Status KvManager::select(StepPlan& plan, int i, int layer, const float* q, int n_head, float scale) {
  if (plan.owner_ != this || i < 0 || i >= (int)plan.seqs.size() || layer < 0 || layer >= cfg_.n_layer)
    return InvalidArgument("KV manager: select outside the step plan");
  SeqStepPlan& sp = plan.seqs[(size_t)i];
  LayerStepPlan& lp = sp.layers[(size_t)layer];
  if (!lp.needs_selection) return Status::Ok();
  if (n_head <= 0 || n_head % cfg_.n_kv_heads != 0)
    return InvalidArgument("KV manager: " + std::to_string(n_head) + " query heads for " +
                           std::to_string(cfg_.n_kv_heads) + " kv heads");
  if (!valid(sp.seq) || seqs_[sp.seq].length != sp.pos0)
    return InvalidArgument("KV manager: select for a sequence that changed since prepare()");
  Sequence& s = seqs_[sp.seq];
  LayerState& ls = s.layers[layer];
  const PageTable& pt = ls.pages;
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int64_t kv_len = std::min<int64_t>(s.length + sp.n_new, pt.size() * cfg_.page_size);
  if (topk_hot_set(policy)) {
    STRIDE_ASSIGN_OR_RETURN(lp.pages, hot_->plan(policy, ls.pages, ls.hot, s.length, kv_len, q, sp.n_new, n_head,
                                                 scale, lp.spare_pages));
  } else {
    STRIDE_ASSIGN_OR_RETURN(lp.pages, plan_topk(policy, pt.table, cfg_.page_size, kv_len, s.length, sp.n_new,
                                                policy_q_block(policy, sp.n_new), *summaries_, q, n_head,
                                                cfg_.n_kv_heads, scale));
  }
  lp.pages.work = partition_work(lp.pages, cfg_.page_size, cfg_.n_kv_heads);
  lp.pages_present = visible_held_pages(pt.table, lp.pages, cfg_.page_size);
  lp.needs_selection = false;
#ifndef NDEBUG
  const Status plan_ok = check_plan(lp.pages, policy, cfg_.page_size, kv_len);
  assert(plan_ok.ok());
#endif
  return Status::Ok();
}

void KvManager::count_layer(const LayerStepPlan& lp, int layer) {
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int64_t read = lp.pages.n_entries();
  const int64_t window_read = window_entries(lp.pages, policy, cfg_.page_size);
  std::lock_guard<std::mutex> lock(stats_mu_);
  attention_seconds_[(size_t)policy.kind] += lp.seconds;
  pages_read_by_policy_[(size_t)policy.kind] +=
      lp.pages.per_head() ? (double)read / cfg_.n_kv_heads : (double)read;
  pages_present_by_policy_[(size_t)policy.kind] += (double)lp.pages_present;
  (lp.pages.per_head() ? head_pages_read_ : pages_read_) += read;
  pages_present_ += lp.pages_present;
  (lp.pages.per_head() ? head_window_pages_read_ : window_pages_read_) += window_read;
}

Status KvManager::commit(StepPlan& plan) {
  if (plan.owner_ != this) return InvalidArgument("KV manager: commit of a plan it did not prepare");
  Status result = Status::Ok();
  for (const SeqStepPlan& sp : plan.seqs) {
    if (!valid(sp.seq) || seqs_[sp.seq].length != sp.pos0) {
      result = InvalidArgument("KV manager: commit for a sequence that changed since prepare()");
      continue;
    }
    Sequence& s = seqs_[sp.seq];
    const int64_t before = s.length;
    const int kept = sp.n_keep < 0 ? sp.n_new : sp.n_keep;
    if (kept > sp.n_new || (kept < sp.n_new && !sp.may_truncate)) {
      result = InvalidArgument("KV manager: commit keeps " + std::to_string(kept) + " of " +
                               std::to_string(sp.n_new) + " tokens of a step that may not be cut");
      continue;
    }
    if (kept < sp.n_new) drop_step_tail(s, sp, kept);
    s.length = std::min<int64_t>(s.length + kept, capacity(s));
    // Registered before the release below, so released pages stay cached.
    register_full_pages(s, sp.tokens, (int)(s.length - before));
    for (int l = 0; l < cfg_.n_layer; ++l) {
      release_unseen(s, l);
      count_layer(sp.layers[(size_t)l], l);
    }
  }
  plan.release_spares();
  return result;
}

void KvManager::return_spares(StepPlan& plan) {
  for (SeqStepPlan& sp : plan.seqs)
    for (LayerStepPlan& lp : sp.layers) {
      for (const int32_t page : lp.spare_pages) pages_.release(page);
      lp.spare_pages.clear();
    }
}

// Frees every full page none of whose slots policy_keeps for the next query.
void KvManager::release_unseen(Sequence& s, int layer) {
  PageTable& pt = s.layers[layer].pages;
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int ps = cfg_.page_size;
  const int64_t n_full = std::min<int64_t>(s.length / ps, pt.size());
  int64_t first_unsettled = -1;
  for (int64_t L = pt.scan_from; L < n_full; ++L) {
    const int32_t page = pt.table[(size_t)L];
    bool settled = true;
    if (page >= 0) {
      const int32_t* pos = pool_->positions(page);
      bool kept_now = false, kept_forever = false;
      for (int t = 0; t < ps && !kept_forever; ++t) {
        kept_now = kept_now || policy_keeps(policy, pos[t], s.length);
        kept_forever = policy_keeps(policy, pos[t], kForever);
      }
      if (!kept_now) {
        pages_.release(page);
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
