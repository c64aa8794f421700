// stride: command-line entry point.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "core/cpu_features.h"
#include "kernels/amx_check.h"
#include "loader/encrypted_file.h"

int main(int argc, char** argv) {
  // Before any kernel runs: a CPU that cannot run any path (or a bad
  // STRIDE_CPU) is a clear error, not a SIGILL.
  const char* env_cpu = std::getenv("STRIDE_CPU");
  const std::string forced = env_cpu ? env_cpu : "";
  if (auto path = stride::resolve_cpu_path(forced); !path.ok()) {
    std::fprintf(stderr, "stride: %s\n", path.status().message().c_str());
    return 1;
  } else if (*path == stride::CpuPath::Amx) {
    if (auto check = stride::kernels::check_amx_path(); !check.ok()) {
      if (!forced.empty()) {
        std::fprintf(stderr, "stride: STRIDE_CPU=%s: %s\n", forced.c_str(), check.message().c_str());
        return 1;
      }
      std::fprintf(stderr, "stride: warning: %s; running the avx512 path instead\n", check.message().c_str());
      stride::disable_amx_path();
    }
  }
  // The key of encrypted models, when no config gives one.
  const char* key_hex = std::getenv("STRIDE_MODEL_KEY");
  const char* key_file = std::getenv("STRIDE_MODEL_KEY_FILE");
  stride::set_model_key_fallback({key_hex ? key_hex : "", key_file ? key_file : ""});
  CLI::App app{"stride: sparse-attention inference engine for long-context language models"};
  app.require_subcommand(1);
  int exit_code = 0;
  stride::cli::add_run_command(app, exit_code);
  stride::cli::add_score_command(app, exit_code);
  stride::cli::add_info_command(app, exit_code);
  stride::cli::add_tokenize_command(app, exit_code);
  stride::cli::add_validate_command(app, exit_code);
  stride::cli::add_eval_command(app, exit_code);
  stride::cli::add_calibrate_heads_command(app, exit_code);
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
