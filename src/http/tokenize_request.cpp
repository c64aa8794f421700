// POST /tokenize and /detokenize bodies (declared in http/openai_request.h).
#include "http/openai_request.h"

namespace stride::server {

using json = nlohmann::json;

ApiError parse_tokenize(const json& b, TokenizeCall& out) {
  Fields f(b);
  // "prompt" (vLLM) or "content" (llama-server); both are type-checked.
  for (const char* key : {"prompt", "content"}) {
    if (const json* v = f.find(key); v && !v->is_string()) return f.type_error(key, "a string");
  }
  const json* text = f.find("prompt") ? f.find("prompt") : f.find("content");
  if (!text) return bad_field("prompt", "'prompt' (or 'content') must be a string");
  out.text = text->get<std::string>();
  STRIDE_API_TRY(f.opt_bool("add_special_tokens", out.add_special));
  STRIDE_API_TRY(f.opt_bool("add_special", out.add_special));
  STRIDE_API_TRY(f.opt_bool("parse_special", out.parse_special));
  return {};
}

ApiError parse_detokenize(const json& b, int n_vocab, size_t max_tokens, std::vector<int32_t>& out) {
  const json* ts = Fields(b).find("tokens");
  if (!ts || !ts->is_array()) return bad_field("tokens", "'tokens' must be a list of token ids");
  if (ts->size() > max_tokens) {
    return bad_field("tokens", "at most " + std::to_string(max_tokens) + " tokens can be detokenized at once");
  }
  out.reserve(ts->size());
  for (const auto& t : *ts) {
    const std::optional<int64_t> id = json_int64(t);
    if (!id || *id < 0 || *id >= n_vocab) {
      return bad_field("tokens", "token ids must be integers in [0, " + std::to_string(n_vocab) + ")");
    }
    out.push_back((int32_t)*id);
  }
  return {};
}

}  // namespace stride::server
