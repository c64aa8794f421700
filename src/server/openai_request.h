#pragma once
// Parses and validates OpenAI request bodies into serving::ServeRequest.
#include <nlohmann/json.hpp>
#include <string>

#include "attention/policy.h"
#include "serving/chat_template.h"
#include "serving/config.h"
#include "serving/request.h"
#include "tokenizer/tokenizer.h"

namespace stride::server {

// An API-level failure: HTTP status plus OpenAI's error fields.
struct ApiError {
  int status = 0;  // 0: no error
  std::string message;
  std::string param;
  std::string code;
  bool ok() const { return status == 0; }
};

struct ParseContext {
  const serving::ServeConfig* cfg = nullptr;
  const Tokenizer* tok = nullptr;
  const Expected<serving::ChatTemplate>* chat = nullptr;
  std::string model_id;
  PolicySpec attention;  // the engine's policy
  int n_vocab = 0;
};

struct GenerationCall {
  serving::ServeRequest req;
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  std::string prompt_text;  // for the audit log (only when enabled)
};

ApiError parse_generation(const nlohmann::json& body, bool chat, const ParseContext& ctx, GenerationCall& out);

}  // namespace stride::server
