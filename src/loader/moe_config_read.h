#pragma once
// MoeConfig from GGUF metadata or an HF config.json, validated.
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "loader/gguf_file.h"
#include "loader/moe_config.h"

namespace stride {

// From GGUF metadata ("<arch>.expert_count", "<arch>.expert_used_count",
// "<arch>.expert_feed_forward_length", "<arch>.expert_shared_feed_forward_length",
// "<arch>.expert_weights_norm"); norm_default where the file does not say, as
// llama.cpp decides it per architecture. n_ff: the dense hidden size, the
// expert size when the file has none.
Status read_moe_gguf(const GGUFFile& f, const std::string& arch, int n_ff, bool norm_default, MoeConfig& out);

// From an HF config.json (num_local_experts / num_experts, num_experts_per_tok,
// moe_intermediate_size, shared_expert_intermediate_size, norm_topk_prob).
// Every layer must be sparse (decoder_sparse_step 1, no mlp_only_layers).
Status read_moe_json(const nlohmann::json& j, int n_ff, bool norm_default, MoeConfig& out);

}  // namespace stride
