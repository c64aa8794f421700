#pragma once
// Human and JSON summaries of a loaded model for `stride info`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loader/model_source.h"

namespace stride {

// Multi-line text: architecture, shape, rope, per-layer windows, dtypes, sizes.
std::string describe_model(const ModelSource& src);
nlohmann::json describe_model_json(const ModelSource& src);

// Compact list of layer indices, e.g. {0,1,2,4} -> "0-2,4".
std::string format_layer_ranges(const std::vector<int>& layers);

}  // namespace stride
