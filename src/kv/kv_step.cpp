// The step of the KV manager: prepare (reserve and plan), write, select
// (top-k), commit (advance, cache, release). See kv_manager.h.
#include <algorithm>
#include <cassert>
#include <optional>
#include <string>

#include "attention/page_mass.h"
#include "attention/topk_selector.h"
#include "kv/kv_manager.h"
#include "core/thread_pool.h"
#include "kv/layer_pages.h"

namespace stride {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

StepPlan::StepPlan(StepPlan&& o) noexcept : steps(o.steps), seqs(std::move(o.seqs)), owner_(o.owner_) {
  o.steps = {};
  o.owner_ = nullptr;
}

StepPlan& StepPlan::operator=(StepPlan&& o) noexcept {
  if (this != &o) {
    release_spares();
    steps = o.steps;
    o.steps = {};
    seqs = std::move(o.seqs);
    owner_ = o.owner_;
    o.owner_ = nullptr;
  }
  return *this;
}

StepPlan::~StepPlan() { release_spares(); }

void StepPlan::release_spares() {
  if (owner_)
    for (SeqStepPlan& sp : seqs)
      for (LayerStepPlan& lp : sp.layers) {
        for (const int32_t page : lp.spare_pages) owner_->pages_.release(page);
        lp.spare_pages.clear();
      }
  owner_ = nullptr;
}

Expected<StepPlan> KvManager::prepare(std::span<const SequenceStep> batch, std::vector<int>* unfit) {
  if (unfit) unfit->clear();
  STRIDE_RETURN_IF_ERROR(reservation_.check(seqs_, batch));
  // The tier's room is shared by the batch, so whether it may refuse a move is decided once.
  const bool refuse = reservation_.tier_may_refuse(seqs_, batch);
  std::vector<int64_t> need(batch.size());
  int64_t total = 0;
  for (size_t i = 0; i < batch.size(); ++i)
    total += need[i] = reservation_.step_pages(seqs_[batch[i].seq], batch[i].n, refuse);
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
  plan.steps = batch;
  plan.seqs.resize(batch.size());
  size_t next = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceStep& step = batch[i];
    KvSequence& s = seqs_[step.seq];
    SeqStepPlan& sp = plan.seqs[i];
    sp.pos0 = s.length;
    sp.layers.resize((size_t)cfg_.n_layer);
    const int64_t n_logical = ceil_div(s.length + step.n, cfg_.page_size);
    for (int l = 0; l < cfg_.n_layer; ++l) {
      // Spares first: their count reads the layer before this step's pages join it.
      const int64_t spares = reservation_.spare_pages(s, l, step.n, refuse);
      for (int64_t k = 0; k < spares; ++k) sp.layers[(size_t)l].spare_pages.push_back(got[next++]);
      PageTable& pt = s.layers[(size_t)l].pages;
      while (pt.size() < n_logical) pt.push(got[next++]);
    }
    // Only the prompt's last chunk asks for its last token's logits alone.
    const bool ends_prompt = step.logits && !step.all_logits;
    for (int l = 0; l < cfg_.n_layer; ++l)
      plan_static_layer(s.layers[(size_t)l].pages, cfg_.layer_policies[(size_t)l], cfg_.page_size, cfg_.n_kv_heads,
                        s.length, step.n, step.may_truncate, ends_prompt, sp.layers[(size_t)l]);
  }
  assert(next == got.size());
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return plan;
}

Status KvManager::write_rows(StepPlan& plan, int i, int layer, int row0, int rows, const float* k, const float* v) {
  if (plan.owner_ != this || i < 0 || i >= (int)plan.seqs.size() || layer < 0 || layer >= cfg_.n_layer)
    return InvalidArgument("KV manager: write outside the step plan");
  const SequenceStep& step = plan.steps[(size_t)i];
  if (row0 < 0 || rows < 0 || row0 + rows > step.n) return InvalidArgument("KV manager: write outside the step's rows");
  SeqStepPlan& sp = plan.seqs[(size_t)i];
  if (!seqs_.valid(step.seq) || seqs_[step.seq].length != sp.pos0)
    return InvalidArgument("KV manager: write for a sequence that changed since prepare()");
  const KvSequence& s = seqs_[step.seq];
  const PageTable& pt = s.layers[(size_t)layer].pages;
  const int ps = cfg_.page_size;
  if (sp.pos0 + step.n > pt.size() * ps) return Internal("KV manager: write beyond the pages prepare() reserved");
  const int64_t k_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_k;
  const int64_t v_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_v;
  const bool summarize =
      summaries_ && (cfg_.summarize_every_layer || cfg_.layer_policies[(size_t)layer].kind == PolicyKind::TopK);
  // A may_truncate step is written whole: its rollback stashes every new key at once.
  if (summarize && step.may_truncate && (row0 != 0 || rows != step.n))
    return InvalidArgument("KV manager: a step that may be truncated is written whole");
  for (int t = 0; t < rows;) {
    const int64_t pos = sp.pos0 + row0 + t;
    const int slot = (int)(pos % ps);
    const int run = std::min(rows - t, ps - slot);  // tokens that land in this page
    const int32_t page = pt.table[(size_t)(pos / ps)];
    if (page < 0) return Internal("KV manager: write into a released page");
    pool_->store(page, slot, run, k + t * k_row, k_row, v + t * v_row, v_row, pos);
    // A full page's keys no longer change: their int8 copy is made once, here.
    if (key_codes_ && slot + run == ps && cfg_.layer_policies[(size_t)layer].rerank_int8)
      key_codes_->encode(*pool_, page);
    if (summarize) {
      if (t == 0 && step.may_truncate) rollback_.stash(s, sp.pos0, step.n, sp.layers[(size_t)layer], layer, k);
      summaries_->update(page, slot, run, k + t * k_row, k_row);
    }
    t += run;
  }
  return Status::Ok();
}

Status KvManager::select(StepPlan& plan, int i, int layer, const float* q, int n_head, float scale,
                         ThreadPool& threads) {
  WorkerScratch& scratch = threads.scratch(0);
  if (plan.owner_ != this || i < 0 || i >= (int)plan.seqs.size() || layer < 0 || layer >= cfg_.n_layer)
    return InvalidArgument("KV manager: select outside the step plan");
  const SequenceStep& step = plan.steps[(size_t)i];
  SeqStepPlan& sp = plan.seqs[(size_t)i];
  LayerStepPlan& lp = sp.layers[(size_t)layer];
  if (!lp.needs_selection) return Status::Ok();
  if (n_head <= 0 || n_head % cfg_.n_kv_heads != 0)
    return InvalidArgument("KV manager: " + std::to_string(n_head) + " query heads for " +
                           std::to_string(cfg_.n_kv_heads) + " kv heads");
  if (!seqs_.valid(step.seq) || seqs_[step.seq].length != sp.pos0)
    return InvalidArgument("KV manager: select for a sequence that changed since prepare()");
  KvSequence& s = seqs_[step.seq];
  KvLayerState& ls = s.layers[(size_t)layer];
  const PageTable& pt = ls.pages;
  const PolicySpec& policy = cfg_.layer_policies[(size_t)layer];
  const int64_t kv_len = std::min<int64_t>(s.length + step.n, pt.size() * cfg_.page_size);
  if (topk_hot_set(policy)) {
    STRIDE_ASSIGN_OR_RETURN(lp.pages, hot_->plan(policy, ls.pages, ls.hot, s.length, kv_len, q, step.n, n_head,
                                                 scale, lp.spare_pages, scratch));
  } else {
    // The oracle (estimate=oracle) ranks by exact mass: slow on purpose, a yardstick for evaluations.
    std::optional<std::vector<float>> exact;
    if (policy.oracle_estimate)
      exact = oracle_page_scores(*pool_, pt.table, kv_len, q, step.n, n_head, cfg_.n_kv_heads, scale);
    STRIDE_ASSIGN_OR_RETURN(lp.pages, plan_topk(policy, pt.table, cfg_.page_size, kv_len, s.length, step.n,
                                                policy_q_block(policy, step.n), *summaries_, q, n_head,
                                                cfg_.n_kv_heads, scale, &scratch, exact ? &*exact : nullptr,
                                                policy.rerank_estimate ? pool_.get() : nullptr,
                                                policy.rerank_int8 ? key_codes_.get() : nullptr, &threads));
  }
  finish_layer_plan(pt, cfg_.page_size, cfg_.n_kv_heads, lp);
  lp.needs_selection = false;
  if (observer_ && !topk_hot_set(policy)) {
    observer_->on_selection({layer, &policy, s.length, step.n, q, n_head, cfg_.n_kv_heads, scale, cfg_.page_size,
                             kv_len, &pt.table, summaries_.get(), pool_.get(), &lp.pages});
  }
#ifndef NDEBUG
  const Status plan_ok = check_plan(lp.pages, policy, cfg_.page_size, kv_len);
  assert(plan_ok.ok());
#endif
  return Status::Ok();
}

Status KvManager::commit(StepPlan& plan) {
  if (plan.owner_ != this) return InvalidArgument("KV manager: commit of a plan it did not prepare");
  Status result = Status::Ok();
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const SequenceStep& step = plan.steps[i];
    const SeqStepPlan& sp = plan.seqs[i];
    if (!seqs_.valid(step.seq) || seqs_[step.seq].length != sp.pos0) {
      result = InvalidArgument("KV manager: commit for a sequence that changed since prepare()");
      continue;
    }
    KvSequence& s = seqs_[step.seq];
    const int64_t before = s.length;
    const int kept = sp.n_keep < 0 ? step.n : sp.n_keep;
    if (kept > step.n || (kept < step.n && !step.may_truncate)) {
      result = InvalidArgument("KV manager: commit keeps " + std::to_string(kept) + " of " +
                               std::to_string(step.n) + " tokens of a step that may not be cut");
      continue;
    }
    if (kept < step.n) rollback_.drop_step_tail(s, sp, kept);
    s.length = std::min<int64_t>(s.length + kept, seqs_.capacity(s));
    // Registered before the release below, so released pages stay cached.
    prefix_.register_full_pages(s, step.tokens, (int)(s.length - before), shared_.get());
    for (int l = 0; l < cfg_.n_layer; ++l) {
      const PolicySpec& policy = cfg_.layer_policies[(size_t)l];
      release_unseen(s.layers[(size_t)l].pages, policy, cfg_.page_size, s.length, *pool_, pages_);
      reads_.add(sp.layers[(size_t)l], policy);
    }
  }
  plan.release_spares();
  return result;
}

}  // namespace stride
