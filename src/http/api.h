#pragma once
// The OpenAI-compatible API as the server and the gRPC front end see it: the
// shared context (http/api_context.h) and the router (http/api_router.h),
// which hands each request to its endpoint's handler. This is the only layer
// that sees JSON; the scheduler gets plain ServeRequests.
#include <memory>
#include <string>
#include <vector>

#include "http/access.h"
#include "http/api_context.h"
#include "http/api_router.h"
#include "http/audit_log.h"
#include "http/served_model.h"
#include "serving/admission.h"
#include "serving/config.h"
#include "serving/metrics.h"
#include "session/session_store.h"

namespace stride::server {

class Api {
 public:
  Api(const serving::ServeConfig& cfg, serving::Metrics& metrics, AuditLog* audit, std::vector<Cidr> allowlist)
      : ctx_(cfg, metrics, audit, std::move(allowlist)), router_(ctx_) {}

  void handle(const HttpRequest& req, Responder& res) { router_.handle(req, res); }
  void set_model(std::shared_ptr<ModelHandle> m) { ctx_.served.set_model(std::move(m)); }  // then ready
  void set_loader(ModelLoader loader) { ctx_.served.set_loader(std::move(loader)); }
  ModelPtr model() const { return ctx_.served.model(); }
  // Loads and warms `ref` beside the serving version, then switches new
  // requests to it; on failure the old version keeps serving. Returns seconds taken.
  Expected<double> switch_model(const ModelRef& ref) { return ctx_.served.switch_model(ref); }
  // The directory POST /admin/model {"version": V} resolves versions in.
  void set_model_dir(const std::string& dir) { ctx_.served.set_model_dir(dir); }
  // Saved sessions (session_dir); without a store the session endpoints answer 404.
  void set_session_store(std::unique_ptr<SessionStore> store) { ctx_.sessions = std::move(store); }
  void set_draining() { ctx_.admission.set_draining(); }
  bool ready() const { return ctx_.admission.ready(); }
  bool draining() const { return ctx_.admission.draining(); }
  // What other front ends (gRPC) share with HTTP: one admission (rate and
  // in-flight limits count a key's requests over both), config, audit log.
  serving::Admission& admission() { return ctx_.admission; }
  const serving::ServeConfig& config() const { return ctx_.cfg; }
  AuditLog* audit() const { return ctx_.audit; }
  const std::vector<Cidr>& allowlist() const { return ctx_.allowlist; }

 private:
  ApiContext ctx_;
  ApiRouter router_;
};

}  // namespace stride::server
