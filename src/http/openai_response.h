#pragma once
// Builds OpenAI response bodies (full and streamed) from serving events.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/request.h"
#include "tokenizer/tokenizer.h"

namespace stride::server {

struct ResponseIds {
  std::string id;
  std::string model;
  int64_t created = 0;
  bool chat = false;
};

// `cached_tokens`: the prompt tokens the prefix cache supplied (OpenAI's
// prompt_tokens_details.cached_tokens); `cache_write_tokens`: those it keeps
// from this request (prompt_tokens_details.cache_write_tokens, as the
// official client names it).
nlohmann::json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens, int cache_write_tokens);
// OpenAI's input_tokens_details.cache_write_tokens: the prompt tokens in the
// whole KV pages this request computed, which the prefix cache keeps for later
// requests (none without the prefix cache).
int cache_write_tokens(int prompt_tokens, int cached_tokens, int page_size, bool prefix_cache);
// Log-probs of generated tokens in the completions or chat shape (a NaN
// logprob, an echoed prompt's first token, is written as null).
nlohmann::json logprobs_json(const std::vector<serving::TokenLogprob>& lps, const Tokenizer& tok, bool chat,
                             size_t text_offset);
// A choice's finish_reason as OpenAI's enums allow it. A request the server
// ended early ("timeout": request_timeout_s passed; "cancelled") stopped short
// of its end as a max_tokens cap would: "length", with stride's own reason in
// the choice's "stride_finish_reason". Other values are left as they are.
void settle_finish_reason(nlohmann::json& choice);
// One full (non-streamed) response; its finish_reason is stride's until
// settle_finish_reason (after tool calls are read from the text).
nlohmann::json completion_json(const ResponseIds& ids, const std::string& text, const std::string& finish,
                               const nlohmann::json& logprobs, const nlohmann::json& usage);
// One SSE chunk's object (finish_reason settled). `finish` empty: not the last; `role_only`: chat's first delta.
nlohmann::json chunk_json(const ResponseIds& ids, const std::string& text, const std::string& finish,
                          const nlohmann::json& logprobs, bool role_only = false);
// A chat chunk with the given `delta` object.
nlohmann::json delta_chunk_json(const ResponseIds& ids, const nlohmann::json& delta, const std::string& finish,
                                const nlohmann::json& logprobs);
std::string sse(const nlohmann::json& j);
std::string dump(const nlohmann::json& j);  // invalid UTF-8 becomes U+FFFD

}  // namespace stride::server
