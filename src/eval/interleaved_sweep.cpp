#include "eval/interleaved_sweep.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/engine.h"
#include "engine/shared_prefill.h"

namespace stride {

namespace {

std::vector<size_t> spread_order(const std::vector<TaskInstance>& instances) {
  int n = 0;  // trials per (task, length), the largest
  for (const TaskInstance& t : instances) n = std::max(n, t.trial + 1);
  // visit[t]: when trial t comes up in the sequence frac(k * golden) * n.
  std::vector<int64_t> visit((size_t)n, -1);
  const double golden = (std::sqrt(5.0) - 1) / 2;
  int64_t assigned = 0, k = 0;
  for (; assigned < n && k < 1000 * (int64_t)n; ++k) {
    const double x = (double)k * golden;
    const size_t t = std::min((size_t)n - 1, (size_t)((x - std::floor(x)) * n));
    if (visit[t] < 0) visit[t] = k, ++assigned;
  }
  for (int64_t& v : visit)
    if (v < 0) v = k++;
  std::vector<size_t> order(instances.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return visit[(size_t)instances[a].trial] < visit[(size_t)instances[b].trial];
  });
  return order;
}

}  // namespace

PrefillSharing plan_prefill_sharing(const std::vector<InterleavedRun>& runs, const TaskInstance& t, bool share) {
  PrefillSharing plan;
  plan.takes.assign(runs.size(), false);
  if (!share) return plan;
  std::vector<size_t> pending;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].memo.recall(t)) pending.push_back(i);
  for (size_t a = 0; a < pending.size() && plan.producer < 0; ++a) {
    const Engine& producer = *runs[pending[a]].engine;
    for (size_t b = a + 1; b < pending.size(); ++b) {
      if (!runs[pending[b]].engine->takes_prefill_of(producer, t.ids.size())) continue;
      plan.producer = (int)pending[a];
      plan.takes[pending[b]] = true;
    }
  }
  return plan;
}

Status run_prompt_by_prompt(const std::vector<InterleavedRun>& runs, const std::vector<TaskInstance>& instances,
                            bool share_prefill, const std::function<void(size_t, size_t)>& on_prompt) {
  for (const InterleavedRun& r : runs)
    if (!r.engine || !r.memo.recall || !r.memo.record)
      return InvalidArgument("a prompt-by-prompt sweep needs an engine and a trial log for every run");
  const std::vector<size_t> order = spread_order(instances);
  for (size_t i = 0; i < order.size(); ++i) {
    const TaskInstance& t = instances[order[i]];
    const std::vector<TaskInstance> one = {t};
    const PrefillSharing sharing = plan_prefill_sharing(runs, t, share_prefill);
    PrefilledPrompt shared;  // the producer's, once it ran
    for (size_t r = 0; r < runs.size(); ++r) {
      const InterleavedRun& run = runs[r];
      if (run.memo.recall(t)) continue;
      Engine& engine = *run.engine;
      TrialGenerator generate;
      if ((int)r == sharing.producer) {
        generate = [&](const TaskInstance& ti, const GenerateOptions& g) -> Expected<TrialGeneration> {
          STRIDE_ASSIGN_OR_RETURN(GenerateResult res, engine.generate_sharing(ti.ids, g, {}, shared));
          return TrialGeneration{std::move(res)};
        };
      } else if (sharing.takes[r] && engine.takes_prefill(shared)) {
        generate = [&](const TaskInstance&, const GenerateOptions& g) -> Expected<TrialGeneration> {
          STRIDE_ASSIGN_OR_RETURN(GenerateResult res, engine.generate_prefilled(shared, g, {}));
          return TrialGeneration{std::move(res), shared.pages_read, shared.pages_present};
        };
      }
      STRIDE_ASSIGN_OR_RETURN(const PolicyRun done, run_suite(engine, run.policy, one, {}, run.memo, generate));
      (void)done;  // recorded in the log through the memo
    }
    if (on_prompt) on_prompt(i + 1, instances.size());
  }
  return Status::Ok();
}

}  // namespace stride
