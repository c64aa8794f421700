#pragma once
// POST /v1/completions and /v1/chat/completions (api_generate.cpp).
#include "http/api_handler.h"

namespace stride::server {

class SessionsHandler;

class CompletionsHandler : public ApiHandler {
 public:
  // A generation that names a "session" starts from it (`sessions`).
  CompletionsHandler(ApiContext& ctx, SessionsHandler& sessions) : ApiHandler(ctx), sessions_(sessions) {}
  void generate(const HttpRequest& req, Responder& res, ApiCall& call, bool chat);

 private:
  SessionsHandler& sessions_;
};

}  // namespace stride::server
