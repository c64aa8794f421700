#pragma once
// The API's front door for one HTTP request: the allowlist, the route and
// method table, the bearer key, the readiness and rate checks, then the
// endpoint's handler; /health, /ready, /metrics and the web UI's files are
// answered here. Every request is recorded (metrics, audit line) once its
// response is over (ApiCall::done).
#include <atomic>
#include <cstdint>

#include "http/api_admin.h"
#include "http/api_embeddings.h"
#include "http/api_generate.h"
#include "http/api_handler.h"
#include "http/api_infill.h"
#include "http/api_models.h"
#include "http/api_responses.h"
#include "http/api_sessions.h"
#include "http/api_tokenize.h"

namespace stride::server {

class ApiRouter : public ApiHandler {
 public:
  explicit ApiRouter(ApiContext& ctx);
  void handle(const HttpRequest& req, Responder& res);

 private:
  void route(const HttpRequest& req, Responder& res, ApiCall& call);

  std::atomic<uint64_t> next_id_{1};
  SessionsHandler sessions_;
  CompletionsHandler completions_;
  ResponsesHandler responses_;
  InfillHandler infill_;
  EmbeddingsHandler embeddings_;
  ModelsHandler models_;
  TokenizeHandler tokenize_;
  AdminHandler admin_;
};

}  // namespace stride::server
