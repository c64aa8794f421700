#pragma once
// POST /v1/embeddings (OpenAI's shape): parses and validates the body.
//   input:           a string, a list of strings, a list of token ids, or a
//                    list of lists of token ids (never empty; no mixing)
//   encoding_format: "float" (default) | "base64" (little-endian float32)
//   dimensions:      optional; must equal the model's embedding size (models
//                    here are not trained for truncated embeddings)
//   model, user:     strings (model must name the served model)
// Limits: at most max_inputs inputs, each 1..max_input_tokens tokens, at most
// max_total_tokens in all; beyond any of them the request is a 400.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/json_fields.h"

namespace stride::server {

struct EmbeddingsContext {
  std::string model_id;
  std::vector<std::string> model_names;  // accepted as "model"
  // Text to token ids, as the model reads it (special tokens stay text).
  std::function<std::vector<int32_t>(const std::string&)> encode;
  int n_vocab = 0;
  int n_embd = 0;
  int64_t max_input_tokens = 0;
  int max_inputs = 0;
  int64_t max_total_tokens = 0;
  bool strict_requests = true;  // unknown fields: 400 (else logged and ignored)
};

struct EmbeddingsCall {
  std::vector<std::vector<int32_t>> inputs;
  bool base64 = false;
  std::string prompt_text;  // the text inputs joined (for the audit log)
};

ApiError parse_embeddings(const nlohmann::json& body, const EmbeddingsContext& ctx, EmbeddingsCall& out);

// The response body: {"object": "list", "data": [...], "model", "usage"}.
nlohmann::json embeddings_json(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                               int prompt_tokens);
// Little-endian float32 bytes, base64-encoded (what OpenAI's clients decode).
std::string base64_floats(const std::vector<float>& v);

}  // namespace stride::server
