#include "eval/needle_trace.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "attention/page_mass.h"
#include "attention/topk_bound.h"
#include "attention/topk_selector.h"
#include "eval/observer_scope.h"

namespace stride {

const char* needle_outcome_name(NeedleOutcome o) {
  switch (o) {
    case NeedleOutcome::Read: return "read";
    case NeedleOutcome::EstimateMiss: return "estimate_miss";
    case NeedleOutcome::BudgetMiss: return "budget_miss";
  }
  return "?";
}

namespace {

// Candidate pages best first by `score`, ties to the lower page (the selector's order).
template <typename T>
std::vector<int64_t> ranks_by(const std::vector<T>& score, const std::vector<int64_t>& candidates) {
  std::vector<int64_t> order = candidates;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[(size_t)a] > score[(size_t)b]; });
  std::vector<int64_t> rank(score.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) rank[(size_t)order[i]] = (int64_t)i;
  return rank;
}

// What the selection of the first single-query step shows, per layer and kv head.
struct ObservedHead {
  int layer = 0, kv_head = 0;
  std::vector<uint8_t> selected, fixed;
  std::vector<float> estimate;
  std::vector<double> mass;
};

class FirstDecodeObserver final : public SelectionObserver {
 public:
  void on_selection(const SelectionView& v) override {
    if (v.n_q != 1 || !v.summaries || seen_.count(v.layer)) return;
    seen_[v.layer] = true;
    query_position_ = v.q_pos0;
    page_size_ = v.page_size;
    const int dim = v.summaries->head_dim(), group = v.n_head / v.n_kv_heads;
    const float scale = v.scale > 0.f ? v.scale : 1.f / std::sqrt((float)dim);
    const int64_t n_pages = std::min<int64_t>((int64_t)v.page_table->size(), (v.kv_len + v.page_size - 1) / v.page_size);
    const TopkBlockBudget budget = topk_block_budget(*v.policy, v.page_size, n_pages, v.q_pos0, v.q_pos0);
    const int64_t gp = budget.geo.group_pages;
    for (int h = 0; h < v.n_kv_heads; ++h) {
      ObservedHead o;
      o.layer = v.layer;
      o.kv_head = h;
      o.selected.assign((size_t)n_pages, 0);
      o.fixed.assign((size_t)n_pages, 0);
      o.estimate.assign((size_t)n_pages, -INFINITY);
      for (int64_t e = v.plan->entry_begin(0, h); e < v.plan->entry_end(0, h); ++e)
        o.selected[(size_t)(v.plan->page_first[(size_t)e] / v.page_size)] = 1;
      std::vector<const float*> rows;
      for (int j = 0; j < group; ++j) rows.push_back(v.q + ((int64_t)h * group + j) * dim);
      for (int64_t L = 0; L < n_pages; ++L) {
        o.fixed[(size_t)L] = L < budget.geo.n_sink * gp || L >= budget.geo.local_from * gp;
        const int32_t page = (*v.page_table)[(size_t)L];
        if (page >= 0)
          o.estimate[(size_t)L] = max_summary_bound(rows.data(), group, v.summaries->min(page, h),
                                                    v.summaries->max(page, h), dim);
      }
      const std::vector<float> keys = gather_head_keys(*v.pool, *v.page_table, v.kv_len, h);
      o.mass = exact_page_mass(rows.data(), group, dim, scale, keys.data(), v.kv_len, v.page_size);
      heads_.push_back(std::move(o));
    }
  }
  const std::vector<ObservedHead>& heads() const { return heads_; }
  int64_t query_position() const { return query_position_; }
  int page_size() const { return page_size_; }

 private:
  std::map<int, bool> seen_;
  std::vector<ObservedHead> heads_;
  int64_t query_position_ = 0;
  int page_size_ = 0;
};


}  // namespace

HeadTrace trace_head(int layer, int kv_head, const std::vector<uint8_t>& selected, const std::vector<uint8_t>& fixed,
                     const std::vector<float>& estimate, const std::vector<double>& mass,
                     const std::vector<NeedleSpan>& needles, int page_size) {
  HeadTrace t;
  t.layer = layer;
  t.kv_head = kv_head;
  t.pages = (int64_t)mass.size();
  std::vector<int64_t> candidates;
  for (int64_t L = 0; L < t.pages; ++L) {
    if (selected[(size_t)L]) t.selected_mass += mass[(size_t)L];
    if (fixed[(size_t)L]) {
      t.oracle_mass += mass[(size_t)L];
      continue;
    }
    candidates.push_back(L);
    t.budget += selected[(size_t)L];
  }
  t.candidates = (int64_t)candidates.size();
  const std::vector<int64_t> by_estimate = ranks_by(estimate, candidates);
  const std::vector<int64_t> by_mass = ranks_by(mass, candidates);
  for (const int64_t L : candidates)
    if (by_mass[(size_t)L] < t.budget) t.oracle_mass += mass[(size_t)L];
  for (size_t n = 0; n < needles.size(); ++n) {
    bool read = true, in_oracle = true;
    for (int64_t L = needles[n].first / page_size; L <= (needles[n].end - 1) / page_size && L < t.pages; ++L) {
      NeedlePageTrace p;
      p.needle = (int)n;
      p.page = L;
      p.fixed = fixed[(size_t)L];
      p.selected = selected[(size_t)L];
      p.rank_estimate = by_estimate[(size_t)L];
      p.rank_exact = by_mass[(size_t)L];
      p.estimate = estimate[(size_t)L];
      p.mass = mass[(size_t)L];
      if (!p.selected) {
        read = false;
        in_oracle = in_oracle && p.rank_exact >= 0 && p.rank_exact < t.budget;
      }
      t.needle_pages.push_back(p);
    }
    if (needles[n].asked)
      t.outcomes.push_back(read ? NeedleOutcome::Read : in_oracle ? NeedleOutcome::EstimateMiss : NeedleOutcome::BudgetMiss);
  }
  return t;
}

Expected<NeedleTrace> trace_needles(Engine& engine, const TaskInstance& instance) {
  if (instance.needles.empty()) return Unsupported("no needle located in the prompt");
  FirstDecodeObserver observer;
  int32_t first_token = -1;
  {
    ObserverScope scope(engine.kv(), &observer);
    GenerateOptions g;
    g.max_tokens = 2;  // the prompt's token, then one decode step
    g.ignore_eos = true;
    g.sampling.temperature = 0.f;
    STRIDE_ASSIGN_OR_RETURN(GenerateResult r, engine.generate(instance.ids, g, {}));
    first_token = r.generated_ids.empty() ? -1 : r.generated_ids[0];
  }
  if (observer.heads().empty()) return Unsupported("no top-k layer selected pages on the first decode step");
  NeedleTrace out;
  out.query_position = observer.query_position();
  out.page_size = observer.page_size();
  out.needles = instance.needles;
  out.ids = instance.ids;
  out.ids.push_back(first_token);
  size_t counted = 0;
  for (const ObservedHead& o : observer.heads()) {
    HeadTrace h = trace_head(o.layer, o.kv_head, o.selected, o.fixed, o.estimate, o.mass, instance.needles,
                             out.page_size);
    for (const NeedleOutcome oc : h.outcomes) {
      ++counted;
      (oc == NeedleOutcome::Read ? out.read : oc == NeedleOutcome::EstimateMiss ? out.estimate_miss : out.budget_miss) += 1;
    }
    out.heads.push_back(std::move(h));
  }
  if (counted > 0) {
    out.read /= (double)counted;
    out.estimate_miss /= (double)counted;
    out.budget_miss /= (double)counted;
  }
  return out;
}

}  // namespace stride
