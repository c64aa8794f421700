#pragma once
// The request fields that change what is scored or how the prompt is built:
// `logit_bias` (chat and completions), and on completions `echo` (the
// prompt in the reply, with its log-probs when `logprobs` is set) and
// `suffix` (fill-in-the-middle). Read after the prompt and `logprobs`.
#include <nlohmann/json.hpp>

#include "http/json_fields.h"
#include "serving/generation_request.h"

namespace stride::server {

// logit_bias: {"<token id>": bias in [-100, 100]}; every key must be a token
// id of the vocabulary (the 400 names the key).
ApiError read_logit_bias(const nlohmann::json& body, int n_vocab, SamplingParams& s);

ApiError read_scoring_fields(const nlohmann::json& body, bool chat, int n_vocab, serving::GenerationRequest& g);

}  // namespace stride::server
