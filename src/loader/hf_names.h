#pragma once
// HF parameter names -> GGUF tensor names ("model.layers.3.mlp.up_proj.weight"
// -> "blk.3.ffn_up.weight"). Gemma's sandwich norms map differently.
#include <string>

#include "loader/model_config.h"

namespace stride {

// "" when the name is not one stride knows.
std::string hf_to_gguf_name(const std::string& hf_name, Arch arch);

}  // namespace stride
