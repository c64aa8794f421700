#pragma once
// A sweep run prompt by prompt: each prompt goes through every run (dense
// and the policies) before the next one starts, so a sweep stopped at any
// point leaves paired trials in its log, not one policy's complete run and
// nothing of the others. The report is then made from the log.
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/ruler_suite.h"

namespace stride {

class Engine;

struct InterleavedRun {
  Engine* engine = nullptr;
  std::string policy;
  TrialMemo memo;  // recall and record are both required
};

// Prompts go round the tasks and lengths, trial by trial, and the trials in
// a golden-ratio order (0, 0.618, 0.236, ... of the way through), so a sweep
// stopped early already covers every task and the whole range of depths.
// on_prompt(done, total) is optional. Stops at the first error.
Status run_prompt_by_prompt(const std::vector<InterleavedRun>& runs, const std::vector<TaskInstance>& instances,
                            const std::function<void(size_t, size_t)>& on_prompt);

}  // namespace stride
