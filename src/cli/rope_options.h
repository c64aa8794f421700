#pragma once
// The RoPE override flags (--rope-scaling, --rope-scale, --yarn-orig-ctx, ...)
// of every command that loads a decoder model.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loader/rope_override.h"

namespace stride::cli {

// Each flag parses straight into `o` (a bad value is a usage error).
void add_rope_options(CLI::App* cmd, RopeOverride& o);

// serve: each flag is the config key of the same name given on the command
// line; `values` holds the text, `flags` gets (key, &text) as serve's other flags.
void add_rope_flags(CLI::App* cmd, std::map<std::string, std::string>& values,
                    std::vector<std::pair<std::string, std::string*>>& flags);

}  // namespace stride::cli
