// `stride tokenize`: registers the command; the work is in cmd_tokenize.cpp.
#include <memory>
#include <optional>

#include "cli/cmd_tokenize.h"
#include "cli/commands.h"

namespace stride::cli {

void add_tokenize_command(CLI::App& app, int& exit_code) {
  struct TokenizeArgs {
    std::string model;
    std::optional<std::string> prompt;
    std::optional<std::string> file;
    bool bos = false;
  };
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text, space-separated");
  cmd->add_option("--model,-m", args->model, "GGUF file (vocabulary-only files work) or HF folder with tokenizer.json")->required();
  auto* p = cmd->add_option("--prompt,-p", args->prompt, "text to tokenize");
  auto* f = cmd->add_option("--file,-f", args->file, "file whose exact bytes are tokenized");
  p->excludes(f);
  cmd->add_flag("--bos", args->bos, "prepend BOS");
  cmd->callback([args, &exit_code] {
    if (!args->prompt && !args->file) {
      std::fprintf(stderr, "error: give --prompt or --file\n");
      exit_code = 1;
      return;
    }
    exit_code = stride::cmd_tokenize(args->model, args->prompt, args->file, args->bos);
  });
}

}  // namespace stride::cli
