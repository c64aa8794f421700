// `stride eval`: a RULER-style long-context quality suite. Tasks (needles in
// real text, variable tracking, common/frequent words, passkey) are built
// from a seed, sized with the model's tokenizer, and generated greedily by
// dense attention (the reference, always first, or recorded in an earlier
// report given by --reference) and by each -a POLICY; the
// table gives accuracy per task x length x policy and its difference from
// dense in points, and the share of KV pages each policy read.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/head_type_option.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "cli/eval_prompt_format.h"
#include "cli/eval_report.h"
#include "cli/eval_sweep_cost.h"
#include "eval/interleaved_sweep.h"
#include "eval/ruler_reference.h"
#include "eval/ruler_score.h"
#include "eval/ruler_suite.h"
#include "eval/trial_log.h"
#include "core/cpu_features.h"
#include "core/sha256.h"

namespace stride::cli {

namespace {

struct EvalArgs {
  ModelRunOptions model;
  std::vector<std::string> policies;
  std::string tasks;  // empty: all
  std::string lengths = "4096,8192";
  int depths = 10;
  int trials = 1;
  uint64_t seed = 1;
  std::string text_file;
  std::string json_out;
  std::string plot_out;
  std::string reference;  // an earlier --json report whose dense run is reused
  int chunk = 256;
  std::string chat = "auto";
  int max_new_tokens = 0;
  std::string resume;  // trial log (JSON lines): trials in it are not run again; new ones are appended
  bool dry_run = false;
  bool trace_failures = false;  // trace the selection of each needle a policy misses where dense found it
  std::string order = "policy";  // policy: each run over every prompt in turn; prompt: each prompt through every run
  bool logged_only = false;      // report the prompts every run has in the trial log; run nothing
  bool no_shared_prefill = false;  // --order prompt: every run computes its own prefill
  std::string only_trials;  // comma-separated trial (depth) indices to keep; empty: all
};

Expected<RulerSuiteOptions> suite_options(const EvalArgs& a) {
  RulerSuiteOptions o;
  if (!a.tasks.empty()) {
    o.tasks.clear();
    std::stringstream ss(a.tasks);
    std::string name;
    while (std::getline(ss, name, ',')) {
      STRIDE_ASSIGN_OR_RETURN(RulerTask t, parse_ruler_task(name));
      o.tasks.push_back(t);
    }
  }
  STRIDE_ASSIGN_OR_RETURN(std::vector<double> lengths, parse_number_list(a.lengths, "length"));
  o.lengths.clear();
  for (double l : lengths) {
    if (l < 1 || l != (double)(int64_t)l) return InvalidArgument("lengths must be positive token counts");
    o.lengths.push_back((int64_t)l);
  }
  if (a.depths < 1 || a.trials < 1) return InvalidArgument("--depths and --trials must be at least 1");
  o.depths = a.depths;
  o.trials = a.trials;
  o.seed = a.seed;
  o.max_new_tokens = a.max_new_tokens;
  return o;
}

// Generates every instance on `engine`, showing progress on a terminal.
Expected<PolicyRun> run_policy(Engine& engine, const std::string& policy, const std::vector<TaskInstance>& instances,
                               const TrialMemo& memo) {
  const bool tty = isatty(fileno(stderr));
  auto run = run_suite(engine, policy, instances, [&](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\r%s: %zu/%zu trials", policy.c_str(), done, total);
  }, memo);
  if (tty) std::fprintf(stderr, "\n");
  if (run) {
    const size_t recalled = std::count_if(run->trials.begin(), run->trials.end(), [](const RulerTrial& t) { return t.recalled; });
    std::fprintf(stderr, "eval: %s: %zu trials in %.1f s (%zu from the trial log)\n", policy.c_str(),
                 run->trials.size(), run->seconds, recalled);
  }
  return run;
}

// Everything besides the prompt that shapes a policy's answers: a trial log
// recalls a trial only for the same run, prompt and answer bound. The CPU
// kernel path is part of it because each path sums floats in its own order;
// the thread count is not (logits do not depend on it).
std::string run_key(const ModelRunOptions& m, const std::string& policy, int chunk) {
  std::string key = policy + ";kv=" + m.kv_type + ";page=" + std::to_string(m.page_size) +
                    ";chunk=" + std::to_string(chunk) + ";cpu=" + cpu_path_name(active_cpu_path());
  for (const std::string& l : m.layer_policies) key += ";layer=" + l;
  if (m.head_type != "file") key += ";head=" + m.head_type;
  const RopeOverride& r = m.rope;
  auto num = [&](const char* name, const auto& v) {
    if (v) key += std::string(";") + name + "=" + std::to_string(*v);
  };
  if (r.type) key += ";rope=" + std::to_string((int)*r.type);
  num("rope_scale", r.factor);
  num("rope_freq_scale", r.freq_scale);
  num("yarn_orig_ctx", r.original_context);
  num("yarn_attn_factor", r.attn_factor);
  num("yarn_beta_fast", r.beta_fast);
  num("yarn_beta_slow", r.beta_slow);
  num("rope_freq_base", r.freq_base);
  return key;
}

TrialMemo memo_of(TrialLog* log, const std::string& run) {
  if (!log) return {};
  return {[log, run](const TaskInstance& t) { return log->find(run, prompt_fingerprint(t), t.max_new_tokens); },
          [log, run](const TaskInstance& t, const RecordedTrial& done) {
            return log->append(run, prompt_fingerprint(t), t.max_new_tokens, done);
          }};
}

// The dense run of the --reference report, which must have been made with the
// same prefill chunk and page size (they set the order of the float sums).
Expected<PolicyRun> recorded_dense_run(const EvalArgs& a, const std::string& model_sha256,
                                       const std::vector<TaskInstance>& instances) {
  STRIDE_ASSIGN_OR_RETURN(const std::string text, read_text(a.reference));
  const nlohmann::json r = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (r.is_discarded()) return InvalidArgument("reference: " + a.reference + " is not valid JSON");
  for (const auto& [key, want] : {std::pair<const char*, int64_t>{"chunk", a.chunk}, {"page_size", a.model.page_size}}) {
    if (!r.is_object() || !r.contains(key) || !r[key].is_number_integer() || r[key].get<int64_t>() != want)
      return InvalidArgument(std::string("reference: recorded with another --") + (key[0] == 'c' ? "chunk" : "page-size") +
                             " (or not recorded); dense must run with the same one");
  }
  return dense_run_from_report(r, model_sha256, instances);
}

// Builds the instances with the dense engine's tokenizer, then runs dense
// and each policy in turn (one engine alive besides dense at a time).
int run_eval(const EvalArgs& a, nlohmann::json& report, std::vector<TaskInstance>& instances,
             std::vector<PolicyRun>& runs) {
  auto opts = suite_options(a);
  if (!opts) return fail(opts.status());
  for (const std::string& p : a.policies)
    if (auto spec = parse_policy(p); !spec) return fail(spec.status());
  auto text = read_text(a.text_file.empty() ? default_text_path() : a.text_file);
  if (!text) return fail(text.status());
  int64_t longest = 0;
  for (int64_t l : opts->lengths) longest = std::max(longest, l);
  // Prompts land within a few tokens of their length; room for the answer.
  const int64_t context = longest + longest / 16 + (a.max_new_tokens > 0 ? a.max_new_tokens : 128) + 64;
  ModelRunOptions reference = a.model;
  reference.layer_policies.clear();  // the reference is dense on every layer
  if (reference.kv_type == "int8") reference.kv_type = "f16";  // as validate: int8 is under test
  const bool prompt_order = a.order == "prompt" && !a.logged_only;
  const bool share = prompt_order && !a.no_shared_prefill;  // key summaries on every engine, for top-k takers
  auto dense = make_engine(reference, "dense", context, a.chunk, false, share);
  if (!dense) return fail(dense.status());
  if (!(*dense)->tokenizer()) return fail("eval needs a model with a tokenizer (a GGUF file)");
  std::string chat_label;
  auto format = prompt_format(**dense, a.chat, chat_label);
  if (!format) return fail(format.status());
  auto haystack = Haystack::from_text(std::move(*text), *(*dense)->tokenizer());
  if (!haystack) return fail(haystack.status());
  auto built = build_suite(*opts, TaskContext{*haystack, *(*dense)->tokenizer(), *format});
  if (!built) return fail(built.status());
  instances = std::move(*built);
  if (!a.only_trials.empty()) {
    auto keep = parse_number_list(a.only_trials, "trial");
    if (!keep) return fail(keep.status());
    std::erase_if(instances, [&](const TaskInstance& t) {
      return std::find(keep->begin(), keep->end(), (double)t.trial) == keep->end();
    });
    if (instances.empty()) return fail("--only-trials: no prompt has one of those trial indices");
  }
  report["chat"] = chat_label;
  for (RulerTask t : opts->tasks) report["tasks"].push_back(ruler_task_name(t));
  report["lengths"] = opts->lengths;

  std::unique_ptr<TrialLog> log;
  if (!a.resume.empty()) {
    auto opened = TrialLog::open(a.resume, report["model_sha256"].get<std::string>());
    if (!opened) return fail(opened.status());
    log = std::make_unique<TrialLog>(std::move(*opened));
    std::fprintf(stderr, "eval: trial log %s: %zu trials recorded%s\n", a.resume.c_str(), log->size(),
                 log->skipped_lines() ? " (a line cut short skipped)" : "");
  }
  // A report that cannot serve as the reference is refused before anything runs.
  std::optional<PolicyRun> recorded;
  if (!a.reference.empty()) {
    auto r = recorded_dense_run(a, report["model_sha256"].get<std::string>(), instances);
    if (!r) return fail(r.status());
    recorded = std::move(*r);
  }
  std::vector<SweepRun> sweep = {{"dense", run_key(reference, "dense", a.chunk), !a.reference.empty()}};
  for (const std::string& policy : a.policies) sweep.push_back({policy, run_key(a.model, policy, a.chunk)});
  if (a.logged_only) {
    std::erase_if(instances, [&](const TaskInstance& t) {
      return std::any_of(sweep.begin(), sweep.end(), [&](const SweepRun& r) {
        return !r.recorded && !log->find(r.key, prompt_fingerprint(t), t.max_new_tokens);
      });
    });
    std::fprintf(stderr, "eval: %zu prompts have every run in the trial log; reporting those\n", instances.size());
    if (instances.empty()) return fail("no prompt has every run in the trial log");
  }
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<InterleavedRun> interleaved;
  std::vector<size_t> sweep_of;  // interleaved run -> its sweep run
  for (size_t i = 0; prompt_order && i < sweep.size(); ++i) {
    if (sweep[i].recorded) continue;
    Engine* e = dense->get();
    if (i > 0) {
      auto made = make_engine(a.model, sweep[i].policy, context, a.chunk, false, share);
      if (!made) return fail(made.status());
      e = engines.emplace_back(std::move(*made)).get();
    }
    interleaved.push_back({e, sweep[i].policy, memo_of(log.get(), sweep[i].key)});
    sweep_of.push_back(i);
  }
  std::vector<std::vector<bool>> takes(sweep.size(), std::vector<bool>(instances.size(), false));
  for (size_t p = 0; share && p < instances.size(); ++p) {
    const PrefillSharing plan = plan_prefill_sharing(interleaved, instances[p], true);
    for (size_t r = 0; r < interleaved.size(); ++r) takes[sweep_of[r]][p] = plan.takes[r];
  }
  if (Status st = print_sweep_cost(**dense, sweep, instances, log.get(),
                                   [&](size_t r, size_t p) { return (bool)takes[r][p]; });
      !st.ok())
    return fail(st);
  if (a.dry_run) return 0;
  if (prompt_order) {
    const bool tty = isatty(fileno(stderr));
    Status st = run_prompt_by_prompt(interleaved, instances, share, [&](size_t done, size_t total) {
      if (tty) std::fprintf(stderr, "\rprompt by prompt: %zu/%zu", done, total);
    });
    if (tty) std::fprintf(stderr, "\n");
    if (!st.ok()) return fail(st);
    engines.clear();
  }

  if (recorded) {
    std::fprintf(stderr, "eval: dense: %zu trials from %s (recorded, not re-run)\n", recorded->trials.size(),
                 a.reference.c_str());
    report["reference"] = a.reference;
    runs.push_back(std::move(*recorded));
  } else {
    auto dense_run = run_policy(**dense, "dense", instances, memo_of(log.get(), sweep[0].key));
    if (!dense_run) return fail(dense_run.status());
    runs.push_back(std::move(*dense_run));
  }
  dense->reset();
  for (size_t p = 1; p < sweep.size(); ++p) {
    auto engine = make_engine(a.model, sweep[p].policy, context, a.chunk, false);
    if (!engine) return fail(engine.status());
    auto run = run_policy(**engine, sweep[p].policy, instances, memo_of(log.get(), sweep[p].key));
    if (!run) return fail(run.status());
    if (a.trace_failures) {
      auto traced = trace_failures(**engine, runs[0], *run, instances);
      if (!traced) return fail(traced.status());
      std::fprintf(stderr, "eval: %s: %zu missed needles traced\n", sweep[p].policy.c_str(), *traced);
    }
    runs.push_back(std::move(*run));
  }
  return 0;
}

int eval(const EvalArgs& a) {
  if (!a.plot_out.empty() && a.json_out.empty()) return fail("--plot needs --json (the plot is drawn from it)");
  if ((a.order == "prompt" || a.logged_only) && a.resume.empty())
    return fail("--order prompt and --logged-only need --resume (the trial log carries the trials)");
  nlohmann::json report;
  report["model"] = a.model.model;
  report["seed"] = a.seed;
  report["depths"] = a.depths;
  report["trials_per_task"] = a.trials;
  report["chunk"] = a.chunk;
  report["page_size"] = a.model.page_size;
  auto model_sha = sha256_model(a.model.model);
  if (!model_sha) return fail(model_sha.status());
  report["model_sha256"] = *model_sha;
  std::vector<TaskInstance> instances;
  std::vector<PolicyRun> runs;
  if (int rc = run_eval(a, report, instances, runs); rc != 0) return rc;
  if (a.dry_run) return 0;
  report_summary(runs, instances, report);
  report_trials(runs, instances, report);
  if (!a.json_out.empty()) {
    if (Status st = write_json(report, a.json_out); !st.ok()) return fail(st);
  }
  if (!a.plot_out.empty()) {
    if (Status st = run_plot_script(kEvalPlotScript, a.json_out, a.plot_out); !st.ok()) return fail(st);
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "RULER-style long-context quality suite: dense and each policy on seeded retrieval tasks");
  cmd->add_option("--model,-m", args->model.model, "GGUF file")->required();
  add_rope_options(cmd, args->model.rope);
  add_head_type_option(cmd, args->model.head_type);
  cmd->add_option("--attention,-a", args->policies, "policy to score against dense (repeatable)");
  cmd->add_option("--tasks", args->tasks,
                  "comma-separated: niah_single, niah_multikey, niah_multivalue, niah_multiquery, vt, cwe, "
                  "fwe, passkey (default all)");
  cmd->add_option("--lengths", args->lengths, "comma-separated prompt token counts")->capture_default_str();
  cmd->add_option("--depths", args->depths, "needle depths per length, evenly over [0, 1]")->capture_default_str();
  cmd->add_option("--trials", args->trials, "instances per (task, length) of vt, cwe and fwe")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "same seed, same prompts")->capture_default_str();
  cmd->add_option("--text", args->text_file, "haystack document (default ~/.cache/stride/debian-reference.txt)");
  cmd->add_option("--json", args->json_out, "write every trial and the summary as JSON");
  cmd->add_option("--reference", args->reference,
                  "an earlier --json report of the same prompts and model: reuse its dense run instead of "
                  "running dense again");
  cmd->add_option("--resume", args->resume,
                  "trial log (JSON lines): trials already in it are not run again, each new one is appended "
                  "as it finishes, so a stopped sweep resumes");
  cmd->add_flag("--trace-failures", args->trace_failures,
                "for each needle a top-k policy misses where dense found it, record per layer and kv head "
                "the needle pages' rank by the selector's estimate and by exact attention mass");
  cmd->add_flag("--dry-run", args->dry_run, "print what the sweep would run and its estimated time, then stop");
  cmd->add_option("--order", args->order,
                  "policy: each run over every prompt in turn; prompt: each prompt through every run first "
                  "(needs --resume), so a stopped sweep leaves paired trials")
      ->check(CLI::IsMember({"policy", "prompt"}))
      ->capture_default_str();
  cmd->add_flag("--no-shared-prefill", args->no_shared_prefill,
                "--order prompt: every run prefills each prompt itself, instead of decoding on the prefill "
                "of an earlier run whose prompt chunks attend alike (dense, topk prefill=dense)");
  cmd->add_option("--only-trials", args->only_trials,
                  "comma-separated trial indices (a needle task's depth index) to keep of each (task, length)");
  cmd->add_flag("--logged-only", args->logged_only,
                "run nothing: report the prompts for which every run is in the --resume trial log");
  cmd->add_option("--plot", args->plot_out, "draw a heat-map PNG from the JSON (needs matplotlib)");
  cmd->add_option("--chat", args->chat, "auto: the GGUF's chat template if it has one; on; off")
      ->capture_default_str();
  cmd->add_option("--max-new-tokens", args->max_new_tokens, "answer length bound (0: per task, 16-128)")
      ->capture_default_str();
  cmd->add_option("--chunk", args->chunk, "prefill chunk size")->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage of the policy runs: f16, f32 or int8")
      ->capture_default_str();
  cmd->add_option("--page-size", args->model.page_size, "KV page size (tokens)")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies, "per-layer policy A-B=POLICY");
  cmd->callback([args, &exit_code] { exit_code = eval(*args); });
}

}  // namespace stride::cli
