#pragma once
// Shared by the GGUF and HF config readers: validation of a filled ModelConfig.
#include <string>
#include <vector>

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

// Layer il is global when (il + 1) % period == 0 (Gemma-3: 6, Gemma-2: 2).
std::vector<uint8_t> periodic_window_pattern(int n_layer, int period);

// c.layer_windowed from GGUF "<arch>.attention.sliding_window_pattern" (a
// bool per layer, or a period; 0: every layer windowed), else
// periodic_window_pattern(default_period), as llama.cpp reads it.
Status gguf_window_pattern(const GGUFFile& f, const std::string& arch, int default_period, ModelConfig& c);

}  // namespace stride
