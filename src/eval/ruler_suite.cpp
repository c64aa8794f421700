#include "eval/ruler_suite.h"

#include <chrono>
#include <map>

#include "eval/ruler_random.h"
#include "eval/ruler_score.h"
#include "eval/wilson_interval.h"

namespace stride {

std::vector<double> even_depths(int n) {
  if (n <= 1) return {0.5};
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back((double)i / (double)(n - 1));
  return out;
}

Expected<std::vector<TaskInstance>> build_suite(const RulerSuiteOptions& opts, const TaskContext& ctx) {
  if (opts.tasks.empty() || opts.lengths.empty()) return InvalidArgument("no tasks or no lengths to run");
  if (opts.depths < 1 || opts.trials < 1) return InvalidArgument("--depths and --trials must be at least 1");
  const std::vector<double> depths = even_depths(opts.depths);
  std::vector<TaskInstance> out;
  for (RulerTask task : opts.tasks) {
    const bool by_depth = ruler_task_uses_depth(task);
    const int n = by_depth ? (int)depths.size() : opts.trials;
    for (int64_t length : opts.lengths) {
      for (int i = 0; i < n; ++i) {
        TaskSpec spec;
        spec.task = task;
        spec.target_tokens = length;
        spec.depth = by_depth ? depths[i] : 0.5;
        // Seeded by what the instance is, not by its place in the run, so
        // `--tasks niah_single` gives the same prompts as the full suite.
        spec.seed = derive_seed(opts.seed, {(uint64_t)task, (uint64_t)length, (uint64_t)i});
        STRIDE_ASSIGN_OR_RETURN(TaskInstance t, make_task(spec, ctx));
        t.trial = i;
        if (opts.max_new_tokens > 0) t.max_new_tokens = opts.max_new_tokens;
        out.push_back(std::move(t));
      }
    }
  }
  return out;
}

Expected<PolicyRun> run_suite(Engine& engine, const std::string& policy, const std::vector<TaskInstance>& instances,
                              const std::function<void(size_t, size_t)>& on_trial, const TrialMemo& memo,
                              const TrialGenerator& generate) {
  PolicyRun run;
  run.policy = policy;
  int64_t pages_read = 0, pages_present = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    const TaskInstance& t = instances[i];
    RecordedTrial done;
    const RecordedTrial* recalled = memo.recall ? memo.recall(t) : nullptr;
    if (recalled) {
      done = *recalled;
    } else {
      GenerateOptions g;
      g.max_tokens = t.max_new_tokens;
      g.sampling.temperature = 0.f;  // greedy, as RULER scores
      const auto t0 = std::chrono::steady_clock::now();
      const KvStats before = engine.kv().stats();
      TrialGeneration gen;
      if (generate) {
        STRIDE_ASSIGN_OR_RETURN(gen, generate(t, g));
      } else {
        STRIDE_ASSIGN_OR_RETURN(gen.result, engine.generate(t.ids, g, {}));
      }
      const KvStats after = engine.kv().stats();
      done.answer = gen.result.text;
      done.new_tokens = (int)gen.result.generated_ids.size();
      done.pages_read = after.pages_read - before.pages_read + gen.prefill_pages_read;
      done.pages_present = after.pages_present - before.pages_present + gen.prefill_pages_present;
      done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (memo.record) STRIDE_RETURN_IF_ERROR(memo.record(t, done));
    }
    pages_read += done.pages_read;
    pages_present += done.pages_present;
    run.seconds += done.seconds;
    run.trials.push_back({i, done.answer, done.new_tokens, score_answer(done.answer, t.expected), recalled != nullptr});
    if (on_trial) on_trial(i + 1, instances.size());
  }
  run.pages_read_share = pages_present > 0 ? (double)pages_read / (double)pages_present : 0;
  return run;
}

Expected<size_t> trace_failures(Engine& engine, const PolicyRun& dense, PolicyRun& run,
                                const std::vector<TaskInstance>& instances) {
  size_t traced = 0;
  for (size_t i = 0; i < run.trials.size() && i < dense.trials.size(); ++i) {
    RulerTrial& trial = run.trials[i];
    const TaskInstance& t = instances[trial.instance];
    if (trial.score >= 1.0 || dense.trials[i].score < 1.0 || t.needles.empty()) continue;
    Expected<NeedleTrace> tr = trace_needles(engine, t);
    if (!tr && tr.status().code() == StatusCode::kUnsupported) return traced;  // no top-k layer to trace
    if (!tr) return tr.status();
    trial.trace = std::move(*tr);
    ++traced;
  }
  return traced;
}

std::vector<SuiteCell> summarize(const PolicyRun& run, const std::vector<TaskInstance>& instances) {
  std::vector<SuiteCell> cells;
  std::map<std::pair<int, int64_t>, AccuracyMean> means;
  for (const RulerTrial& trial : run.trials) {
    const TaskSpec& s = instances[trial.instance].spec;
    auto [it, fresh] = means.try_emplace({(int)s.task, s.target_tokens});
    if (fresh) cells.push_back({s.task, s.target_tokens, 0, 0});
    it->second.add(trial.score);
  }
  for (SuiteCell& c : cells) {
    const AccuracyMean& m = means.at({(int)c.task, c.length});
    c.accuracy = m.value();
    c.trials = m.count();
    const RateInterval ci = wilson_interval(c.accuracy, c.trials);
    c.ci_lo = ci.lo;
    c.ci_hi = ci.hi;
  }
  return cells;
}

}  // namespace stride
