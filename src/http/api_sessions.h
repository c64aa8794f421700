#pragma once
// /v1/sessions[/{name}] and a generation's "session" (api_sessions.cpp).
#include <string>

#include "http/api_handler.h"

namespace stride::server {

class SessionsHandler : public ApiHandler {
 public:
  explicit SessionsHandler(ApiContext& ctx) : ApiHandler(ctx), sessions_(ctx.sessions) {}
  void sessions(const HttpRequest& req, Responder& res, ApiCall& call);
  // A generation's "session": loads it and checks it starts the prompt; false
  // when refused (the error response is sent).
  bool attach_session(Responder& res, ApiCall& call, GenerationCall& g);

 private:
  class SessionSaveRelay;  // POST /v1/sessions/{name}
  void save_session(const HttpRequest& req, Responder& res, ApiCall& call, const std::string& name);
  void show_session(Responder& res, ApiCall& call, const std::string& name);

  std::unique_ptr<SessionStore>& sessions_;  // the context's store, set once at start-up
};

}  // namespace stride::server
