#include "cli/head_type_option.h"

namespace stride::cli {

void add_head_type_option(CLI::App* cmd, std::string& head_type) {
  cmd->add_option("--head-type", head_type,
                  "output head type: file (as stored) | q4_k | q5_k (requantized at load when smaller; "
                  "rows must be a multiple of 256)")
      ->check(CLI::IsMember({"file", "q4_k", "q5_k"}))
      ->capture_default_str();
}

}  // namespace stride::cli
