#pragma once
// A small JSON file of a model folder (config.json, index, pooling config).
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace stride {

// NotFound when unreadable; Corrupt (naming the file) when not valid JSON.
Expected<nlohmann::json> read_json_file(const std::string& path);

}  // namespace stride
