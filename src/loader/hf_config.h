#pragma once
// ModelConfig from a Hugging Face config.json (llama, mistral, qwen2, qwen3, gemma3).
#include <nlohmann/json.hpp>

#include "core/status.h"
#include "loader/model_config.h"

namespace stride {

// `has_lm_head`: whether lm_head.weight exists (embeddings are tied otherwise).
// HF models rotate halves (NeoX RoPE) and are not permuted: rope_neox = true.
Expected<ModelConfig> config_from_hf_json(const nlohmann::json& j, bool has_lm_head);

}  // namespace stride
