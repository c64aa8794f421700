#pragma once
// One request's context inside the API (id, key, timing, what the audit log
// records); private to server/api*.cpp. The Responder holds it until the
// response is over (its relay, if any, updates it), then it is recorded.
#include <string>

#include "http/api.h"

namespace stride::server {

struct Api::Call final : ResponseEpilogue {
  explicit Call(Api& a) : api(a) {}
  void done(const Responder& res) override { api.record(*this, res); }

  Api& api;
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
