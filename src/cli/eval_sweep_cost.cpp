#include "cli/eval_sweep_cost.h"

#include <cstdio>

#include "eval/ruler_reference.h"
#include "eval/sweep_cost.h"
#include "eval/trial_log.h"

namespace stride::cli {

Status print_sweep_cost(Engine& dense, const std::vector<SweepRun>& runs, const std::vector<TaskInstance>& instances,
                        const TrialLog* log, const std::function<bool(size_t, size_t)>& takes_shared_prefill) {
  size_t recalled = 0;
  int64_t prompt_tokens = 0;
  const TaskInstance* longest = nullptr;
  std::vector<PendingTrial> pending;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].recorded) continue;
    for (size_t i = 0; i < instances.size(); ++i) {
      const TaskInstance& t = instances[i];
      if (log && log->find(runs[r].key, prompt_fingerprint(t), t.max_new_tokens)) {
        ++recalled;
        continue;
      }
      prompt_tokens += (int64_t)t.ids.size();
      pending.push_back({(int64_t)t.ids.size(), t.max_new_tokens, takes_shared_prefill && takes_shared_prefill(r, i)});
      if (!longest || t.ids.size() > longest->ids.size()) longest = &t;
    }
  }
  std::fprintf(stderr, "eval: sweep: %zu runs x %zu prompts; %zu trials to run (%zu in the trial log), %.2fM prompt tokens\n",
               runs.size(), instances.size(), pending.size(), recalled, (double)prompt_tokens / 1e6);
  if (!longest || longest->ids.size() < 64) return Status::Ok();
  STRIDE_ASSIGN_OR_RETURN(const SpeedProbe probe, probe_speed(dense, longest->ids));
  const SweepEstimate e = estimate_sweep(probe, pending);
  std::fprintf(stderr,
               "eval: about %.0f min at dense's speed (probe: %.0f prompt tokens/s at %lld, %.1f decoded tokens/s); "
               "sparse policies are faster\n",
               e.seconds / 60, (double)probe.probe_tokens / probe.prefill_seconds(probe.probe_tokens),
               (long long)probe.probe_tokens, probe.per_decoded > 0 ? 1 / probe.per_decoded : 0.0);
  if (e.shared_prefills > 0)
    std::fprintf(stderr, "eval: %d trials decode on a prefill another run shares (--no-shared-prefill: off): "
                 "about %.0f min of prefill saved, not in the estimate above\n",
                 e.shared_prefills, e.saved_seconds / 60);
  return Status::Ok();
}

}  // namespace stride::cli
