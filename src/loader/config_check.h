#pragma once
// Shared by the GGUF and HF config readers: validation of a filled ModelConfig.
#include "core/status.h"
#include "loader/model_config.h"

namespace stride {

class GGUFFile;

// A finite number at GGUF metadata `key` (any numeric type), else `fallback`.
Status read_gguf_number(const GGUFFile& f, const std::string& key, double fallback, double& out);

// Fills derived defaults (head_dim_v, rope_dim, layer_windowed size) and
// rejects impossible hyper-parameters with a message naming the field.
// `origin` prefixes messages, e.g. "GGUF" or "config.json".
Status finalize_config(ModelConfig& c, const std::string& origin);

// Gemma-3's default layout: every 6th layer (il+1) % 6 == 0 is global.
std::vector<uint8_t> periodic_window_pattern(int n_layer, int period);

}  // namespace stride
