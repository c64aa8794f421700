#include "cli/rope_options.h"

#include "loader/rope_override_keys.h"

namespace stride::cli {

void add_rope_options(CLI::App* cmd, RopeOverride& o) {
  for (const RopeOverrideKey& k : rope_override_keys()) {
    const std::string key = k.key, flag = k.flag;
    cmd->add_option_function<std::string>(
           flag,
           [&o, key](const std::string& v) {
             const Status st = set_rope_override_value(o, key, v);
             if (!st.ok()) throw CLI::ValidationError(st.message());
           },
           k.help)
        ->group("RoPE override");
  }
}

void add_rope_flags(CLI::App* cmd, std::map<std::string, std::string>& values,
                    std::vector<std::pair<std::string, std::string*>>& flags) {
  for (const RopeOverrideKey& k : rope_override_keys()) {
    std::string& text = values[k.key];  // map nodes stay put
    cmd->add_option(k.flag, text, std::string(k.help) + " (config " + k.key + ")")->group("RoPE override");
    flags.push_back({k.key, &text});
  }
}

}  // namespace stride::cli
