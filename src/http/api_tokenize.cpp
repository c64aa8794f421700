#include "http/api_tokenize.h"

#include "http/openai_request.h"
#include "http/openai_response.h"

namespace stride::server {

void TokenizeHandler::tokenize(const HttpRequest& req, Responder& res, ApiCall& call) {
  nlohmann::json b;
  TokenizeCall t;
  ApiError e = parse_json_object(req.body(), b);
  if (e.ok()) e = parse_tokenize(b, t);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  const Tokenizer& tok = *call.model->engine->tokenizer();
  const auto ids = tok.encode(t.text, t.add_special && tok.add_bos_default(), t.parse_special);
  call.prompt_tokens = (int)ids.size();
  json(res, call, 200,
       dump(nlohmann::json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", cfg_.max_context_length}}));
}

void TokenizeHandler::detokenize(const HttpRequest& req, Responder& res, ApiCall& call) {
  nlohmann::json b;
  std::vector<int32_t> ids;
  const Tokenizer& tok = *call.model->engine->tokenizer();
  ApiError e = parse_json_object(req.body(), b);
  if (e.ok()) e = parse_detokenize(b, tok.n_vocab(), (size_t)cfg_.max_context_length, ids);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  json(res, call, 200, dump(nlohmann::json{{"prompt", tok.decode(ids)}}));
}

}  // namespace stride::server
