#pragma once
// One request's context inside the API (id, key, timing, what the audit log
// records); private to http/api*.cpp. The Responder holds it until the
// response is over (its relay, if any, updates it), then it is recorded.
#include <string>

#include "http/api_context.h"
#include "http/responder.h"

namespace stride::server {

struct ApiCall final : ResponseEpilogue {
  explicit ApiCall(ApiContext& c) : ctx(c) {}
  // The metrics and the audit line of the request (api_router.cpp).
  void done(const Responder& res) override;

  ApiContext& ctx;
  std::string id;
  std::string key_id = "-";
  std::string endpoint;
  std::string client_ip;
  serving::Clock::time_point start = serving::Clock::now();
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::string finish_reason;
  std::string prompt;
  ModelPtr model;  // the version this request uses, fixed at arrival
};

}  // namespace stride::server
