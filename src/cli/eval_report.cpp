#include "cli/eval_report.h"

#include <cstdio>

#include "eval/ruler_reference.h"
#include "eval/ruler_score.h"
#include "eval/wilson_interval.h"

namespace stride::cli {

namespace {

nlohmann::json needle_trace_json(const NeedleTrace& tr) {
  nlohmann::json needles = nlohmann::json::array(), heads = nlohmann::json::array();
  for (const NeedleSpan& n : tr.needles)
    needles.push_back({{"tokens", {n.first, n.end}}, {"asked", n.asked},
                       {"pages", {n.first / tr.page_size, (n.end - 1) / tr.page_size}}});
  for (const HeadTrace& h : tr.heads) {
    nlohmann::json pages = nlohmann::json::array(), outcomes = nlohmann::json::array();
    for (const NeedlePageTrace& p : h.needle_pages) {
      auto rank = [&](int64_t r) { return p.fixed ? nlohmann::json() : nlohmann::json(r); };
      pages.push_back({{"needle", p.needle}, {"page", p.page}, {"fixed", p.fixed}, {"selected", p.selected},
                       {"rank_estimate", rank(p.rank_estimate)}, {"rank_exact", rank(p.rank_exact)},
                       {"estimate", p.estimate}, {"mass", p.mass}});
    }
    for (const NeedleOutcome o : h.outcomes) outcomes.push_back(needle_outcome_name(o));
    heads.push_back({{"layer", h.layer}, {"kv_head", h.kv_head}, {"pages", h.pages},
                     {"candidates", h.candidates}, {"budget", h.budget}, {"selected_mass", h.selected_mass},
                     {"oracle_mass", h.oracle_mass}, {"needle_pages", pages}, {"outcomes", outcomes}});
  }
  return {{"query_position", tr.query_position}, {"ids", tr.ids}, {"page_size", tr.page_size}, {"needles", needles},
          {"heads", heads},
          {"summary", {{"read", tr.read}, {"estimate_miss", tr.estimate_miss}, {"budget_miss", tr.budget_miss}}}};
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

}  // namespace

// The table and the JSON summary: accuracy per (task, length, policy) and
// its difference from dense's, in points.
void report_summary(const std::vector<PolicyRun>& runs, const std::vector<TaskInstance>& instances,
                    nlohmann::json& report) {
  std::vector<std::vector<SuiteCell>> cells;  // [policy][cell], the same cells in the same order
  for (const PolicyRun& run : runs) cells.push_back(summarize(run, instances));
  const std::vector<SuiteCell>& dense = cells[0];
  std::printf("%-16s %7s %8s  %-32s %9s %13s %9s %6s\n", "task", "length", "tokens", "policy", "accuracy",
              "95% interval", "vs dense", "trials");
  for (size_t c = 0; c < dense.size(); ++c) {
    const double tokens = mean_tokens(instances, dense[c].task, dense[c].length);
    for (size_t p = 0; p < runs.size(); ++p) {
      const PolicyRun& run = runs[p];
      const SuiteCell& cell = cells[p][c];
      const double delta = 100 * (cell.accuracy - dense[c].accuracy);
      char vs[16] = "-";
      if (p > 0) std::snprintf(vs, sizeof vs, "%+.1f", delta);
      char ci[32];
      std::snprintf(ci, sizeof ci, "[%.0f, %.0f]", 100 * cell.ci_lo, 100 * cell.ci_hi);
      std::printf("%-16s %7lld %8.0f  %-32s %9.1f %13s %9s %6d\n", ruler_task_name(cell.task),
                  (long long)cell.length, tokens, run.policy.c_str(), 100 * cell.accuracy, ci, vs, cell.trials);
      report["summary"].push_back({{"task", ruler_task_name(cell.task)}, {"length", cell.length},
                                   {"policy", run.policy}, {"accuracy", cell.accuracy},
                                   {"ci95", {cell.ci_lo, cell.ci_hi}}, {"vs_dense_points", delta},
                                   {"trials", cell.trials}, {"tokens", tokens}});
    }
  }
  // Per policy: the mean over (task, length) cells, as RULER averages its tasks.
  std::printf("\n%-32s %9s %13s %9s %10s %9s\n", "policy", "mean acc", "95% interval", "vs dense", "pages read",
              "seconds");
  std::vector<double> means;
  for (size_t p = 0; p < runs.size(); ++p) {
    AccuracyMean m;
    for (const SuiteCell& cell : cells[p]) m.add(cell.accuracy);
    means.push_back(m.value());
    char vs[16] = "-";
    if (p > 0) std::snprintf(vs, sizeof vs, "%+.1f", 100 * (means[p] - means[0]));
    // The mean over cells with the interval of all their trials pooled (the
    // same number when every cell has as many trials).
    const RateInterval ci = wilson_interval(means[p], (int)runs[p].trials.size());
    char cis[32];
    std::snprintf(cis, sizeof cis, "[%.0f, %.0f]", 100 * ci.lo, 100 * ci.hi);
    std::printf("%-32s %9.1f %13s %9s %10.3f %9.1f\n", runs[p].policy.c_str(), 100 * means[p], cis, vs,
                runs[p].pages_read_share, runs[p].seconds);
    report["policies"].push_back({{"policy", runs[p].policy}, {"mean_accuracy", means[p]},
                                  {"ci95", {ci.lo, ci.hi}}, {"trials", runs[p].trials.size()},
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
                                  {"recalled", trial.recalled},
                                  {"prompt_sha256", prompt_fingerprint(t)}});
      if (trial.trace) report["trials"].back()["trace"] = needle_trace_json(*trial.trace);
    }
  }
}

// Rows: task; columns: length x policy; colour and label: accuracy.
const char* const kEvalPlotScript = R"PY(
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

}  // namespace stride::cli
