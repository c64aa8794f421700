// `stride eval`: a RULER-style long-context quality suite. Tasks (needles in
// real text, variable tracking, common/frequent words, passkey) are built
// from a seed, sized with the model's tokenizer, and generated greedily by
// dense attention (the reference, always first, or recorded in an earlier
// report given by --reference) and by each -a POLICY; the
// table gives accuracy per task x length x policy and its difference from
// dense in points, and the share of KV pages each policy read.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "loader/chat_template_source.h"
#include "cli/cli_common.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "eval/ruler_reference.h"
#include "eval/ruler_score.h"
#include "eval/ruler_suite.h"
#include "core/sha256.h"
#include "serving/chat_template.h"

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

// Completion style, or the model's chat template (`label` names which).
Expected<PromptFormat> prompt_format(Engine& engine, const std::string& mode, std::string& label) {
  label = "off";
  if (mode == "off") return PromptFormat::completion();
  if (mode != "auto" && mode != "on") return InvalidArgument("--chat must be auto, on or off, not '" + mode + "'");
  const ModelSource& source = engine.model().source();
  STRIDE_ASSIGN_OR_RETURN(const std::string tmpl, model_chat_template(source));
  const std::string arch = source.gguf() ? source.gguf()->get_string_or("general.architecture", "")
                                         : arch_name(source.config.arch);
  if (mode == "auto" && tmpl.empty()) return PromptFormat::completion();
  const serving::ChatTokens tokens =
      engine.tokenizer() ? serving::chat_tokens_of(*engine.tokenizer()) : serving::ChatTokens{};
  Expected<serving::ChatTemplate> t = serving::detect_chat_template(tmpl, arch, tokens);
  if (!t) {
    if (mode == "on") return t.status();
    std::fprintf(stderr, "eval: %s; using completion prompts\n", t.status().message().c_str());
    return PromptFormat::completion();
  }
  label = serving::chat_template_name(*t);
  return PromptFormat::chat([tmpl = *t](const std::string& user) -> Expected<RenderedPrompt> {
    STRIDE_ASSIGN_OR_RETURN(serving::RenderedChat c, serving::render_chat_marked(tmpl, {{"user", user}}));
    return RenderedPrompt{std::move(c.text), std::move(c.literal)};
  });
}

// Generates every instance on `engine`, showing progress on a terminal.
Expected<PolicyRun> run_policy(Engine& engine, const std::string& policy, const std::vector<TaskInstance>& instances) {
  const bool tty = isatty(fileno(stderr));
  auto run = run_suite(engine, policy, instances, [&](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\r%s: %zu/%zu trials", policy.c_str(), done, total);
  });
  if (tty) std::fprintf(stderr, "\n");
  if (run) std::fprintf(stderr, "eval: %s: %zu trials in %.1f s\n", policy.c_str(), run->trials.size(), run->seconds);
  return run;
}

double mean_tokens(const std::vector<TaskInstance>& instances, RulerTask task, int64_t length) {
  double sum = 0;
  int n = 0;
  for (const TaskInstance& t : instances) {
    if (t.spec.task != task || t.spec.target_tokens != length) continue;
    sum += (double)t.ids.size();
    ++n;
  }
  return n ? sum / n : 0;
}

// The table and the JSON summary: accuracy per (task, length, policy) and
// its difference from dense's, in points.
void report_summary(const std::vector<PolicyRun>& runs, const std::vector<TaskInstance>& instances,
                    nlohmann::json& report) {
  std::vector<std::vector<SuiteCell>> cells;  // [policy][cell], the same cells in the same order
  for (const PolicyRun& run : runs) cells.push_back(summarize(run, instances));
  const std::vector<SuiteCell>& dense = cells[0];
  std::printf("%-16s %7s %8s  %-32s %9s %9s\n", "task", "length", "tokens", "policy", "accuracy", "vs dense");
  for (size_t c = 0; c < dense.size(); ++c) {
    const double tokens = mean_tokens(instances, dense[c].task, dense[c].length);
    for (size_t p = 0; p < runs.size(); ++p) {
      const PolicyRun& run = runs[p];
      const SuiteCell& cell = cells[p][c];
      const double delta = 100 * (cell.accuracy - dense[c].accuracy);
      char vs[16] = "-";
      if (p > 0) std::snprintf(vs, sizeof vs, "%+.1f", delta);
      std::printf("%-16s %7lld %8.0f  %-32s %9.1f %9s\n", ruler_task_name(cell.task), (long long)cell.length, tokens,
                  run.policy.c_str(), 100 * cell.accuracy, vs);
      report["summary"].push_back({{"task", ruler_task_name(cell.task)}, {"length", cell.length},
                                   {"policy", run.policy}, {"accuracy", cell.accuracy},
                                   {"vs_dense_points", delta}, {"trials", cell.trials}, {"tokens", tokens}});
    }
  }
  // Per policy: the mean over (task, length) cells, as RULER averages its tasks.
  std::printf("\n%-32s %9s %9s %10s %9s\n", "policy", "mean acc", "vs dense", "pages read", "seconds");
  std::vector<double> means;
  for (size_t p = 0; p < runs.size(); ++p) {
    AccuracyMean m;
    for (const SuiteCell& cell : cells[p]) m.add(cell.accuracy);
    means.push_back(m.value());
    char vs[16] = "-";
    if (p > 0) std::snprintf(vs, sizeof vs, "%+.1f", 100 * (means[p] - means[0]));
    std::printf("%-32s %9.1f %9s %10.3f %9.1f\n", runs[p].policy.c_str(), 100 * means[p], vs,
                runs[p].pages_read_share, runs[p].seconds);
    report["policies"].push_back({{"policy", runs[p].policy}, {"mean_accuracy", means[p]},
                                  {"pages_read_share", runs[p].pages_read_share}, {"seconds", runs[p].seconds}});
  }
}

void report_trials(const std::vector<PolicyRun>& runs, const std::vector<TaskInstance>& instances,
                   nlohmann::json& report) {
  for (const PolicyRun& run : runs) {
    for (const RulerTrial& trial : run.trials) {
      const TaskInstance& t = instances[trial.instance];
      const bool by_depth = ruler_task_uses_depth(t.spec.task);
      report["trials"].push_back({{"task", ruler_task_name(t.spec.task)}, {"length", t.spec.target_tokens},
                                  {"tokens", t.ids.size()},
                                  {"depth", by_depth ? nlohmann::json(t.spec.depth) : nlohmann::json()},
                                  {"trial", t.trial}, {"policy", run.policy}, {"expected", t.expected},
                                  {"answer", trial.answer}, {"score", trial.score},
                                  {"new_tokens", trial.new_tokens}, {"max_new_tokens", t.max_new_tokens},
                                  {"prompt_sha256", prompt_fingerprint(t)}});
    }
  }
}

// Rows: task; columns: length x policy; colour and label: accuracy.
constexpr const char* kPlotScript = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
r = json.load(open(sys.argv[1]))
rows = r["summary"]
tasks = list(dict.fromkeys(x["task"] for x in rows))
cols = list(dict.fromkeys((x["length"], x["policy"]) for x in rows))
grid = [[float("nan")] * len(cols) for _ in tasks]
for x in rows:
    grid[tasks.index(x["task"])][cols.index((x["length"], x["policy"]))] = x["accuracy"]
fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(cols) + 2.5), 0.5 * len(tasks) + 2.2))
im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
for i, row in enumerate(grid):
    for j, v in enumerate(row):
        if v == v:
            ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=8)
ax.set_xticks(range(len(cols)))
ax.set_xticklabels([f"{p}\n{l}" for l, p in cols], fontsize=7, rotation=30, ha="right")
ax.set_yticks(range(len(tasks)))
ax.set_yticklabels(tasks)
ax.set_title(f"stride eval: {r['model'].split('/')[-1]} (accuracy %, seed {r['seed']})", fontsize=9)
fig.colorbar(im, ax=ax, label="accuracy")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
)PY";

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
  auto dense = make_engine(reference, "dense", context, a.chunk, false);
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
  report["chat"] = chat_label;
  for (RulerTask t : opts->tasks) report["tasks"].push_back(ruler_task_name(t));
  report["lengths"] = opts->lengths;

  if (!a.reference.empty()) {
    (*dense).reset();  // its tokenizer built the prompts; the answers come from the report
    auto recorded = recorded_dense_run(a, report["model_sha256"].get<std::string>(), instances);
    if (!recorded) return fail(recorded.status());
    std::fprintf(stderr, "eval: dense: %zu trials from %s (recorded, not re-run)\n", recorded->trials.size(),
                 a.reference.c_str());
    report["reference"] = a.reference;
    runs.push_back(std::move(*recorded));
  } else {
    auto dense_run = run_policy(**dense, "dense", instances);
    if (!dense_run) return fail(dense_run.status());
    runs.push_back(std::move(*dense_run));
  }
  for (const std::string& policy : a.policies) {
    auto engine = make_engine(a.model, policy, context, a.chunk, false);
    if (!engine) return fail(engine.status());
    auto run = run_policy(**engine, policy, instances);
    if (!run) return fail(run.status());
    runs.push_back(std::move(*run));
  }
  return 0;
}

int eval(const EvalArgs& a) {
  if (!a.plot_out.empty() && a.json_out.empty()) return fail("--plot needs --json (the plot is drawn from it)");
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
  report_summary(runs, instances, report);
  report_trials(runs, instances, report);
  if (!a.json_out.empty()) {
    if (Status st = write_json(report, a.json_out); !st.ok()) return fail(st);
  }
  if (!a.plot_out.empty()) {
    if (Status st = run_plot_script(kPlotScript, a.json_out, a.plot_out); !st.ok()) return fail(st);
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
