// `stride info`: what a model file holds.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "loader/model_info.h"
#include "loader/model_source.h"

namespace stride::cli {

void add_info_command(CLI::App& app, int& exit_code) {
  struct InfoArgs {
    std::string model;
    bool json = false;
  };
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Architecture, layers, window per layer, tensor types, size");
  cmd->add_option("--model,-m", args->model, "GGUF file or HF folder")->required();
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args, &exit_code] {
    auto src = open_model(args->model);
    if (!src) {
      exit_code = fail(src.status());
      return;
    }
    if (args->json) {
      std::printf("%s\n", describe_model_json(**src).dump(2).c_str());
    } else {
      std::printf("%s", describe_model(**src).c_str());
    }
    exit_code = 0;
  });
}

}  // namespace stride::cli
