#include "cli/head_type_option.h"

namespace stride::cli {

void add_head_type_option(CLI::App* cmd, std::string& head_type) {
  cmd->add_option("--head-type", head_type,
                  "output head type: file (as stored) | q4_k | q5_k | q4_0 | q5_0 (requantized at load when "
                  "smaller; rows must be a multiple of 256 for q4_k / q5_k, 32 for q4_0 / q5_0)")
      ->check(CLI::IsMember({"file", "q4_k", "q5_k", "q4_0", "q5_0"}))
      ->capture_default_str();
}

}  // namespace stride::cli
