#include "http/openai_response.h"

#include <cmath>

namespace stride::server {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens, int cache_write_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}, {"cache_write_tokens", cache_write_tokens}}}};
}

int cache_write_tokens(int prompt_tokens, int cached_tokens, int page_size, bool prefix_cache) {
  if (!prefix_cache || page_size <= 0) return 0;
  const int whole_pages = prompt_tokens / page_size * page_size;
  return whole_pages > cached_tokens ? whole_pages - cached_tokens : 0;
}

namespace {
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back((int)c);
  return b;
}
}  // namespace

json logprobs_json(const std::vector<serving::TokenLogprob>& lps, const Tokenizer& tok, bool chat, size_t text_offset) {
  if (chat) {
    json content = json::array();
    for (const auto& t : lps) {
      const std::string piece = tok.token_to_piece(t.id);
      json top = json::array();
      for (const auto& alt : t.top) {
        const std::string p = tok.token_to_piece(alt.id);
        top.push_back({{"token", p}, {"logprob", alt.logprob}, {"bytes", bytes_of(p)}});
      }
      content.push_back({{"token", piece}, {"logprob", t.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}});
    }
    // No refusals are generated: OpenAI's schema still requires the member, as null.
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  size_t off = text_offset;
  for (const auto& t : lps) {
    const std::string piece = tok.token_to_piece(t.id);
    tokens.push_back(piece);
    json top = json::object();
    for (const auto& alt : t.top) top[tok.token_to_piece(alt.id)] = alt.logprob;
    // An echoed prompt's first token has no log-prob (NaN): null, as OpenAI writes it.
    const bool none = std::isnan(t.logprob);
    token_lps.push_back(none ? json() : json(t.logprob));
    tops.push_back(none ? json() : top);
    offsets.push_back(off);
    off += piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

void settle_finish_reason(json& choice) {
  const json& reason = choice["finish_reason"];
  if (!reason.is_string()) return;
  const std::string r = reason.get<std::string>();
  if (r == "stop" || r == "length" || r == "tool_calls" || r == "function_call" || r == "content_filter") return;
  choice["stride_finish_reason"] = r;
  choice["finish_reason"] = "length";
}

json completion_json(const ResponseIds& ids, const std::string& text, const std::string& finish, const json& logprobs,
                     const json& usage) {
  json choice = {{"index", 0}, {"finish_reason", finish}, {"logprobs", logprobs}};
  if (ids.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
  } else {
    choice["text"] = text;
  }
  return {{"id", ids.id},
          {"object", ids.chat ? "chat.completion" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", json::array({choice})},
          {"usage", usage}};
}

json delta_chunk_json(const ResponseIds& ids, const json& delta, const std::string& finish, const json& logprobs) {
  json choice = {{"index", 0}, {"logprobs", logprobs}};
  choice["finish_reason"] = finish.empty() ? json() : json(finish);
  settle_finish_reason(choice);
  if (ids.chat) {
    choice["delta"] = delta;
  } else {
    choice["text"] = delta.value("content", "");
  }
  return {{"id", ids.id},
          {"object", ids.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", json::array({choice})}};
}

json chunk_json(const ResponseIds& ids, const std::string& text, const std::string& finish, const json& logprobs,
                bool role_only) {
  json delta = json::object();
  if (role_only) {
    delta = {{"role", "assistant"}, {"content", ""}};
  } else if (!text.empty()) {
    delta["content"] = text;
  }
  if (!ids.chat) delta = {{"content", text}};
  return delta_chunk_json(ids, delta, finish, logprobs);
}

}  // namespace stride::server
