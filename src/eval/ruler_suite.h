#pragma once
// The RULER-style suite: every (task, length, depth or trial) instance is
// built once from the seed, then generated greedily on each engine (dense
// first, as the reference), scored, and summarised as accuracy per
// (task, length).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "eval/needle_trace.h"
#include "eval/ruler_tasks.h"
#include "eval/trial_log.h"

namespace stride {

struct RulerSuiteOptions {
  std::vector<RulerTask> tasks = all_ruler_tasks();
  std::vector<int64_t> lengths = {4096, 8192};
  int depths = 10;         // needle depths, evenly spread over [0, 1]
  int trials = 1;          // instances per (task, length) of the tasks without a depth
  uint64_t seed = 1;
  int max_new_tokens = 0;  // 0: each task's own bound
};

// n depths evenly over [0, 1]; a single one is 0.5.
std::vector<double> even_depths(int n);

// Every instance: by task in the order given, then length, then depth or trial.
Expected<std::vector<TaskInstance>> build_suite(const RulerSuiteOptions& opts, const TaskContext& ctx);

struct RulerTrial {
  size_t instance = 0;  // index into the instances run
  std::string answer;   // the generated text
  int new_tokens = 0;
  double score = 0;
  bool recalled = false;  // taken from a trial log, not run now
  std::optional<NeedleTrace> trace;  // --trace-failures: why a needle was missed
};

struct PolicyRun {
  std::string policy;
  std::vector<RulerTrial> trials;  // one per instance, in order
  double pages_read_share = 0;     // KV pages attention read / pages present, over every trial
  double seconds = 0;              // run now and recalled, summed
};

// Trials a resumed sweep already has (not run again) and where new ones go.
// Both optional.
struct TrialMemo {
  std::function<const RecordedTrial*(const TaskInstance&)> recall;
  std::function<Status(const TaskInstance&, const RecordedTrial&)> record;
};

// How a trial's answer is generated when not engine.generate: a
// prompt-ordered sweep shares one prefill between runs (shared_prefill.h).
// A trial decoded on a prefill made elsewhere counts that prefill's reads.
struct TrialGeneration {
  GenerateResult result;
  int64_t prefill_pages_read = 0;     // reads made by another engine's prefill
  int64_t prefill_pages_present = 0;
};
using TrialGenerator = std::function<Expected<TrialGeneration>(const TaskInstance&, const GenerateOptions&)>;

// on_trial(done, total) and generate are optional.
Expected<PolicyRun> run_suite(Engine& engine, const std::string& policy, const std::vector<TaskInstance>& instances,
                              const std::function<void(size_t, size_t)>& on_trial = {},
                              const TrialMemo& memo = {}, const TrialGenerator& generate = {});

// --trace-failures: for every trial of `run` that scores below 1 where
// `dense` scored 1 on the same prompt and whose prompt has located needles,
// runs the prompt again on `engine` (the run's) with a selection trace
// (needle_trace.h) and keeps it in the trial. Returns how many were traced.
Expected<size_t> trace_failures(Engine& engine, const PolicyRun& dense, PolicyRun& run,
                                const std::vector<TaskInstance>& instances);

struct SuiteCell {
  RulerTask task = RulerTask::NiahSingle;
  int64_t length = 0;
  double accuracy = 0;  // mean trial score
  int trials = 0;
  double ci_lo = 0, ci_hi = 1;  // Wilson 95% interval of the accuracy
};

// Accuracy per (task, length), in the order the instances list them.
std::vector<SuiteCell> summarize(const PolicyRun& run, const std::vector<TaskInstance>& instances);

}  // namespace stride
