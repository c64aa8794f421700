#include "http/api_handler.h"

#include <chrono>
#include <cmath>

#include "http/log.h"
#include "http/openai_request.h"
#include "http/openai_response.h"

namespace stride::server {

using serving::Clock;

void ApiHandler::json(Responder& res, ApiCall& call, int status, const std::string& body) {
  res.send(status, "application/json", body);
}

void ApiHandler::error(Responder& res, ApiCall& call, int status, const std::string& message, const std::string& param,
                       const std::string& code, const Headers& extra) {
  res.send(status, "application/json", dump(error_body(status, message, param, code)), extra);
}

std::string ApiHandler::client_key(const ApiCall& call) { return call.key_id != "-" ? call.key_id : call.client_ip; }

void ApiHandler::refuse(Responder& res, ApiCall& call, const serving::Refusal& r) {
  Headers extra;
  if (r.retry_after_s > 0) extra.push_back({"Retry-After", std::to_string((int)std::ceil(r.retry_after_s))});
  error(res, call, r.exhausted() ? 429 : 503, r.message, "", r.code, extra);
}

void ApiHandler::audit_event(const std::string& kind, const ApiCall& call, const std::string& detail,
                             std::map<std::string, std::string> fields) {
  if (!ctx_.audit) return;
  AuditEvent e;
  e.kind = kind;
  e.client_ip = call.client_ip;
  e.key_id = call.key_id;
  e.detail = detail;
  e.fields = std::move(fields);
  e.fields["endpoint"] = call.endpoint;
  e.fields["request_id"] = call.id;
  if (Status st = ctx_.audit->write_event(e); !st.ok()) log(LogLevel::Error, "audit log write failed", {{"error", st.message()}});
}

ParseContext ApiHandler::parse_context(const HttpRequest& req, const ApiCall& call) const {
  ParseContext ctx;
  ctx.cfg = &cfg_;
  ctx.tok = call.model->engine->tokenizer();
  ctx.chat = &call.model->chat;
  ctx.model_id = call.model->id;
  ctx.model_names = call.model->names;
  ctx.attention = call.model->attention;
  ctx.n_vocab = call.model->engine->config().n_vocab;
  ctx.body = req.body();
  return ctx;
}

std::shared_ptr<serving::RequestChannel> ApiHandler::submit_generation(Responder& res, ApiCall& call,
                                                                       const serving::Admission::Slot& slot,
                                                                       GenerationCall& g) {
  call.prompt_tokens = (int)g.req.prompt.size();
  if (cfg_.audit_log_prompts) call.prompt = g.prompt_text;
  g.req.id = call.id;
  g.req.deadline = Clock::now() + std::chrono::microseconds((int64_t)(cfg_.request_timeout_s * 1e6));
  auto refused = slot.refusal();
  if (refused) {
    refuse(res, call, *refused);
    return nullptr;
  }
  auto ch = std::make_shared<serving::RequestChannel>(std::move(g.req));
  if ((refused = admission_.submit(*call.model->scheduler, ch))) {
    refuse(res, call, *refused);
    return nullptr;
  }
  return ch;
}

}  // namespace stride::server
