#pragma once
// What every endpoint handler of the API (and the router) uses: the shared
// context, error and JSON answers, admission refusals, audit events, and the
// parse-and-submit steps the generation endpoints share.
#include <map>
#include <memory>
#include <string>

#include "http/api_call.h"
#include "http/error_body.h"
#include "serving/admission.h"

namespace stride::server {

struct GenerationCall;  // openai_request.h
struct ParseContext;    // openai_request.h

class ApiHandler {
 public:
  explicit ApiHandler(ApiContext& ctx) : ctx_(ctx), cfg_(ctx.cfg), admission_(ctx.admission) {}

  // An OpenAI error object (http/error_body.h).
  void error(Responder& res, ApiCall& call, int status, const std::string& message, const std::string& param = "",
             const std::string& code = "", const Headers& extra = {});
  void json(Responder& res, ApiCall& call, int status, const std::string& body);
  const serving::ServeConfig& config() const { return cfg_; }

 protected:
  // The answer when admission refuses a request: 429 when the client is over a
  // limit or the queue is full (with Retry-After), else 503.
  void refuse(Responder& res, ApiCall& call, const serving::Refusal& r);
  // The key a client's limits count against: its API key, else its address.
  static std::string client_key(const ApiCall& call);
  // An audit line for what is not a request outcome (failed logins, admin actions).
  void audit_event(const std::string& kind, const ApiCall& call, const std::string& detail,
                   std::map<std::string, std::string> fields = {});
  ParseContext parse_context(const HttpRequest& req, const ApiCall& call) const;
  // Hands a parsed request to the scheduler; null when it was refused (the
  // error response is sent: 429 over the key's in-flight limit or a full queue, 503).
  std::shared_ptr<serving::RequestChannel> submit_generation(Responder& res, ApiCall& call,
                                                             const serving::Admission::Slot& slot, GenerationCall& g);

  ApiContext& ctx_;
  const serving::ServeConfig& cfg_;  // ctx_.cfg
  serving::Admission& admission_;    // ctx_.admission
};

}  // namespace stride::server
