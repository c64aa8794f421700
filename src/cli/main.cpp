// stride: command-line entry point.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"stride: sparse-attention inference engine for long-context language models"};
  app.require_subcommand(1);
  int exit_code = 0;
  stride::cli::add_run_command(app, exit_code);
  stride::cli::add_score_command(app, exit_code);
  stride::cli::add_info_command(app, exit_code);
  stride::cli::add_tokenize_command(app, exit_code);
  stride::cli::add_validate_command(app, exit_code);
  stride::cli::add_plan_command(app, exit_code);
  stride::cli::add_serve_command(app, exit_code);
  stride::cli::add_model_command(app, exit_code);
  stride::cli::add_stream_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
