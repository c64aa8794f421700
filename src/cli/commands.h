#pragma once
// Each CLI command registers itself on the app and reports its exit code.
#include <CLI/CLI.hpp>

namespace stride::cli {

void add_run_command(CLI::App& app, int& exit_code);
void add_score_command(CLI::App& app, int& exit_code);
void add_info_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);
void add_validate_command(CLI::App& app, int& exit_code);
void add_eval_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_model_command(CLI::App& app, int& exit_code);
void add_stream_command(CLI::App& app, int& exit_code);
void add_calibrate_heads_command(CLI::App& app, int& exit_code);

}  // namespace stride::cli
