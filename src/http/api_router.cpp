#include "http/api_router.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "http/log.h"
#include "http/web_assets.h"

namespace stride::server {

using serving::Clock;

namespace {

// The UI's pages carry no secrets (the API key stays in the browser), so they
// need no key; the headers keep them from running anything but their own code.
void web_asset(Responder& res, const WebAsset& asset) {
  res.send(200, std::string(asset.content_type), std::string(asset.body),
           {{"Cache-Control", "no-cache"},
            {"X-Content-Type-Options", "nosniff"},
            {"X-Frame-Options", "DENY"},
            {"Referrer-Policy", "no-referrer"},
            {"Content-Security-Policy",
             "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
             "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"}});
}

}  // namespace

ApiRouter::ApiRouter(ApiContext& ctx)
    : ApiHandler(ctx),
      sessions_(ctx),
      completions_(ctx, sessions_),
      responses_(ctx),
      infill_(ctx),
      embeddings_(ctx),
      models_(ctx),
      tokenize_(ctx),
      admin_(ctx) {}

void ApiRouter::handle(const HttpRequest& req, Responder& res) {
  auto owned = std::make_unique<ApiCall>(ctx_);
  ApiCall& call = *owned;
  res.set_epilogue(std::move(owned));  // recorded however the request ends
  char buf[32];
  std::snprintf(buf, sizeof buf, "req-%08llx", (unsigned long long)next_id_.fetch_add(1));
  call.id = buf;
  call.client_ip = res.client_ip();
  const std::string target(req.target());
  call.endpoint = target.substr(0, target.find('?'));
  call.model = ctx_.served.model();
  try {
    route(req, res, call);
  } catch (const std::exception& e) {
    // A bug of ours, not the client's: this request fails, the server lives on.
    log(LogLevel::Error, "request failed", {{"request_id", call.id}, {"endpoint", call.endpoint}, {"error", e.what()}});
    if (!res.started()) error(res, call, 500, "internal error while handling the request");
  }
}

void ApiCall::done(const Responder& res) {
  ctx.metrics.count_http(res.status());
  const bool api_call = endpoint.rfind("/v1/", 0) == 0 || endpoint == "/tokenize" ||
                        endpoint == "/detokenize" || endpoint == "/infill";
  if (ctx.audit && api_call) {
    AuditRecord r;
    r.request_id = id;
    r.client_ip = client_ip;
    r.key_id = key_id;
    r.model_version = model ? model->version : "";
    r.endpoint = endpoint;
    r.status = res.status();
    r.prompt_tokens = prompt_tokens;
    r.completion_tokens = completion_tokens;
    r.latency_s = std::chrono::duration<double>(Clock::now() - start).count();
    r.finish_reason = finish_reason;
    if (ctx.cfg.audit_log_prompts) r.prompt = prompt;
    ctx.audit->write(r);
  }
}

void ApiRouter::route(const HttpRequest& req, Responder& res, ApiCall& call) {
  if (!ip_allowed(call.client_ip, ctx_.allowlist)) {
    return error(res, call, 403, "client address " + call.client_ip + " is not in the allowlist", "", "ip_not_allowed");
  }
  const std::string& path = call.endpoint;
  const auto method = req.method();
  static const std::map<std::string, http::verb> routes = {
      {"/health", http::verb::get},          {"/ready", http::verb::get},
      {"/metrics", http::verb::get},         {"/v1/models", http::verb::get},
      {"/v1/completions", http::verb::post}, {"/v1/chat/completions", http::verb::post},
      {"/v1/responses", http::verb::post},   {"/infill", http::verb::post},
      {"/tokenize", http::verb::post},       {"/detokenize", http::verb::post},
      {"/admin/model", http::verb::post},    {"/v1/embeddings", http::verb::post}};
  auto it = routes.find(path);
  // /v1/sessions and /v1/sessions/{name}: methods checked by sessions().
  const bool session_path = path == "/v1/sessions" || path.rfind("/v1/sessions/", 0) == 0;
  // /v1/models/{model}: the name may hold '/' ("team/default"), so it is the rest of the path.
  static constexpr std::string_view kModelPrefix = "/v1/models/";
  const bool model_path = path.rfind(kModelPrefix, 0) == 0;
  if (model_path) it = routes.find("/v1/models");  // the same method, key and readiness checks
  if (it == routes.end() && method == http::verb::get && cfg_.web_ui) {
    if (const WebAsset* asset = find_web_asset(path)) return web_asset(res, *asset);
  }
  if (it == routes.end() && !session_path) return error(res, call, 404, "no route for " + path, "", "not_found");
  if (!session_path && method != it->second) {
    return error(res, call, 405, "method not allowed on " + path, "", "method_not_allowed",
                 {{"Allow", it->second == http::verb::get ? "GET" : "POST"}});
  }
  if (path == "/health") return json(res, call, 200, R"({"status":"ok"})");
  if (path == "/ready") {
    if (admission_.ready() && !admission_.draining()) return json(res, call, 200, R"({"status":"ready"})");
    return json(res, call, 503, admission_.draining() ? R"({"status":"draining"})" : R"({"status":"loading"})");
  }
  if (path == "/admin/model") return admin_.admin_model(req, res, call);
  // Everything below needs a key when keys are configured.
  const bool needs_key = path != "/metrics" || cfg_.metrics_require_key;
  if (needs_key && !cfg_.api_keys.empty()) {
    const auto auth = req.find(http::field::authorization);
    const std::string token = auth == req.end() ? "" : bearer_token(std::string(auth->value()));
    const int idx = token.empty() ? -1 : match_api_key(token, cfg_.api_keys);
    if (idx < 0) {
      audit_event("auth_failed", call, token.empty() ? "missing bearer token" : "invalid API key");
      return error(res, call, 401, token.empty() ? "missing bearer token (Authorization: Bearer <key>)"
                                                 : "invalid API key", "", "invalid_api_key");
    }
    call.key_id = "key#" + std::to_string(idx);
  }
  if (path == "/metrics") return res.send(200, "text/plain; version=0.0.4; charset=utf-8", ctx_.metrics.render());
  if (auto r = admission_.check_ready(call.model != nullptr)) return refuse(res, call, *r);
  if (path == "/v1/models") return models_.models(res, call);
  if (model_path) return models_.retrieve_model(res, call, std::string_view(path).substr(kModelPrefix.size()));
  if (auto r = admission_.take_rate_token(client_key(call))) return refuse(res, call, *r);
  if (path == "/v1/embeddings") {
    if (auto r = admission_.check_draining()) return refuse(res, call, *r);
    return embeddings_.embeddings(req, res, call);
  }
  if (!call.model->engine) {
    return error(res, call, 400, "the model '" + call.model->id + "' is an embedding model: it serves /v1/embeddings only",
                 "model", "embedding_model");
  }
  if (session_path) return sessions_.sessions(req, res, call);
  if (path == "/tokenize") return tokenize_.tokenize(req, res, call);
  if (path == "/detokenize") return tokenize_.detokenize(req, res, call);
  if (auto r = admission_.check_draining()) return refuse(res, call, *r);
  if (path == "/v1/responses") return responses_.responses(req, res, call);
  if (path == "/infill") return infill_.infill(req, res, call);
  completions_.generate(req, res, call, path == "/v1/chat/completions");
}

}  // namespace stride::server
