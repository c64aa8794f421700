#pragma once
// The RoPE override as text: one name per value, shared by the CLI flags
// (--rope-scale), the serve config keys (rope_scale) and their environment
// variables (STRIDE_ROPE_SCALE).
#include <string>
#include <vector>

#include "core/status.h"
#include "loader/rope_override.h"

namespace stride {

struct RopeOverrideKey {
  const char* key;   // config key: rope_scale
  const char* flag;  // CLI flag: --rope-scale
  const char* help;
};

const std::vector<RopeOverrideKey>& rope_override_keys();

// Parses `value` into the field `key` names; errors name the flag and the key.
Status set_rope_override_value(RopeOverride& o, const std::string& key, const std::string& value);

}  // namespace stride
