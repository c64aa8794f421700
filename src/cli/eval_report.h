#pragma once
// What `stride eval` prints and writes: the table of accuracy per (task,
// length, policy) with Wilson 95% intervals and the difference from dense,
// the per-policy means, every trial as JSON, and the heat-map script.
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/ruler_suite.h"

namespace stride::cli {

// runs[0] is dense, the reference of the "vs dense" column.
void report_summary(const std::vector<PolicyRun>& runs, const std::vector<TaskInstance>& instances,
                    nlohmann::json& report);
void report_trials(const std::vector<PolicyRun>& runs, const std::vector<TaskInstance>& instances,
                   nlohmann::json& report);

// Rows: task; columns: length x policy; colour and label: accuracy. Run by
// run_plot_script with the JSON and PNG paths.
extern const char* const kEvalPlotScript;

}  // namespace stride::cli
