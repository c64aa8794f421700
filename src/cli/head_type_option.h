#pragma once
// The --head-type flag of every command that loads a decoder model to run it.
#include <CLI/CLI.hpp>
#include <string>

namespace stride::cli {

// Registers --head-type on cmd, parsed later by to_engine_options.
void add_head_type_option(CLI::App* cmd, std::string& head_type);

}  // namespace stride::cli
