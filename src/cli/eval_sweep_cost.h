#pragma once
// `stride eval`'s word on what a sweep will cost before it starts
// (eval/sweep_cost.h): trials left to run, and minutes at dense's speed.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/ruler_tasks.h"

namespace stride {
class Engine;
class TrialLog;
}  // namespace stride

namespace stride::cli {

// One run of the sweep: a policy (dense first) and its trial-log key.
struct SweepRun {
  std::string policy;
  std::string key;
  bool recorded = false;  // dense taken from --reference
};

// takes_shared_prefill(run, instance): that trial decodes on another run's
// prefill of its prompt (optional; none when empty).
Status print_sweep_cost(Engine& dense, const std::vector<SweepRun>& runs, const std::vector<TaskInstance>& instances,
                        const TrialLog* log, const std::function<bool(size_t, size_t)>& takes_shared_prefill);

}  // namespace stride::cli
