#pragma once
// A sweep run prompt by prompt: each prompt goes through every run (dense
// and the policies) before the next one starts, so a sweep stopped at any
// point leaves paired trials in its log, not one policy's complete run and
// nothing of the others. The report is then made from the log.
//
// Runs whose prefill of a prompt would be byte for byte the same (dense and
// top-k prefill=dense on the same model and KV layout) share one: the first
// of them left to do prefills and hands the prompt's KV and logits to the
// others, which only decode (engine/shared_prefill.h). Their answers and
// logged reads are those of their own prefill; only the time differs.
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

// Which runs share the prefill of one prompt.
struct PrefillSharing {
  int producer = -1;        // index into the runs: the one that prefills; -1: no sharing
  std::vector<bool> takes;  // [runs]: decodes on the producer's prefill
};

// For prompt t: the first run left to do (not in its trial log) whose
// prefill some later run left to do can take produces it. Off: no sharing.
PrefillSharing plan_prefill_sharing(const std::vector<InterleavedRun>& runs, const TaskInstance& t, bool share);

// Prompts go round the tasks and lengths, trial by trial, and the trials in
// a golden-ratio order (0, 0.618, 0.236, ... of the way through), so a sweep
// stopped early already covers every task and the whole range of depths.
// on_prompt(done, total) is optional. Stops at the first error.
Status run_prompt_by_prompt(const std::vector<InterleavedRun>& runs, const std::vector<TaskInstance>& instances,
                            bool share_prefill, const std::function<void(size_t, size_t)>& on_prompt);

}  // namespace stride
