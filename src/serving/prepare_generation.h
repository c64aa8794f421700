#pragma once
// Turns a GenerationRequest into the ServeRequest the scheduler runs: the
// limits, the chat template, tokenization, the prompt and token
// limits, and the grammar (asked for, or the tool calls' own). Every front
// end (HTTP, gRPC, sessions) prepares its requests here.
#include <string>

#include "core/status.h"
#include "serving/chat_template.h"
#include "serving/config.h"
#include "serving/generation_request.h"
#include "serving/request.h"
#include "tokenizer/tokenizer.h"

namespace stride::serving {

// The model a request is prepared for.
struct PrepareContext {
  const ServeConfig* cfg = nullptr;
  const Tokenizer* tok = nullptr;
  const Expected<ChatTemplate>* chat = nullptr;
  int n_vocab = 0;
};

struct PreparedGeneration {
  ServeRequest req;         // id and deadline are the caller's to set
  std::string prompt_text;  // the text or rendered chat (empty for token prompts), for the audit log
  ToolFormat tool_format = ToolFormat::Generic;  // how the reply writes tool calls (chat)
};

// `g`'s float sampling ranges are checked already (check_generation, or the
// HTTP reader); the other value rules are checked here (check_limits).
RequestError prepare_generation(const GenerationRequest& g, const PrepareContext& ctx, PreparedGeneration& out);

}  // namespace stride::serving
