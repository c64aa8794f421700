#pragma once
// POST /tokenize and /detokenize, as vLLM serves them (api_tokenize.cpp).
#include "http/api_handler.h"

namespace stride::server {

class TokenizeHandler : public ApiHandler {
 public:
  using ApiHandler::ApiHandler;
  void tokenize(const HttpRequest& req, Responder& res, ApiCall& call);
  void detokenize(const HttpRequest& req, Responder& res, ApiCall& call);
};

}  // namespace stride::server
