#pragma once
// POST /infill in llama-server's request shape (input_prefix, input_suffix,
// prompt, n_predict, the llama.cpp sampling names), read onto the same
// fill-in-the-middle generation as completions' `suffix`.
#include <nlohmann/json.hpp>

#include "http/openai_request.h"

namespace stride::server {

ApiError parse_infill(const nlohmann::json& body, const ParseContext& ctx, GenerationCall& out);

}  // namespace stride::server
