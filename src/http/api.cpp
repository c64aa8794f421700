#include "http/api.h"
#include "http/api_call.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "loader/model_versions.h"
#include "http/error_body.h"
#include "http/openai_request.h"
#include "http/log.h"
#include "http/openai_response.h"
#include "http/web_assets.h"

namespace stride::server {

using json = nlohmann::json;
using serving::Clock;

Api::Api(const serving::ServeConfig& cfg, serving::Metrics& metrics, AuditLog* audit, std::vector<Cidr> allowlist)
    : cfg_(cfg), metrics_(metrics), audit_(audit), allowlist_(std::move(allowlist)), admission_(cfg) {}

void Api::set_model(std::shared_ptr<ModelHandle> m) {
  {
    std::lock_guard<std::mutex> lock(model_mu_);
    model_ = std::move(m);
  }
  admission_.set_ready();
  metrics_.ready = 1;
}

ModelPtr Api::model() const {
  std::lock_guard<std::mutex> lock(model_mu_);
  return model_;
}

Expected<ModelRef> model_ref_for_version(const std::string& model_dir, const std::string& version) {
  if (model_dir.empty()) return InvalidArgument("no model_dir is configured, so versions cannot be selected");
  STRIDE_ASSIGN_OR_RETURN(ModelVersion v, resolve_model_version(model_dir, version));
  return ModelRef{v.path, v.sha256, v.version, model_dir};
}

Status record_active_version(const ModelRef& ref) {
  if (ref.model_dir.empty() || ref.version.empty()) return Status::Ok();
  Status st = set_active_model_version(ref.model_dir, ref.version);
  if (!st.ok()) {
    log(LogLevel::Error, "the serving version is not recorded as active; a restart may serve another",
        {{"version", ref.version}, {"reason", st.message()}});
  }
  return st;
}

void Api::set_model_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(model_mu_);
  model_dir_ = dir;
}

Expected<double> Api::switch_model(const ModelRef& ref) {
  if (!loader_) return Unsupported("model switching is not available");
  std::lock_guard<std::mutex> one_at_a_time(switch_mu_);
  const auto t0 = Clock::now();
  auto loaded = loader_(ref);
  if (!loaded.ok()) return loaded.status();
  set_model(std::move(*loaded));
  (void)record_active_version(ref);  // logged; the switch itself succeeded
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void Api::json(Responder& res, Call& call, int status, const std::string& body) {
  res.send(status, "application/json", body);
}

void Api::error(Responder& res, Call& call, int status, const std::string& message, const std::string& param,
                const std::string& code, const Headers& extra) {
  res.send(status, "application/json", dump(error_body(status, message, param, code)), extra);
}

void Api::handle(const HttpRequest& req, Responder& res) {
  auto owned = std::make_unique<Call>(*this);
  Call& call = *owned;
  res.set_epilogue(std::move(owned));  // recorded however the request ends
  char buf[32];
  std::snprintf(buf, sizeof buf, "req-%08llx", (unsigned long long)next_id_.fetch_add(1));
  call.id = buf;
  call.client_ip = res.client_ip();
  const std::string target(req.target());
  call.endpoint = target.substr(0, target.find('?'));
  call.model = model();
  try {
    route(req, res, call);
  } catch (const std::exception& e) {
    // A bug of ours, not the client's: this request fails, the server lives on.
    log(LogLevel::Error, "request failed", {{"request_id", call.id}, {"endpoint", call.endpoint}, {"error", e.what()}});
    if (!res.started()) error(res, call, 500, "internal error while handling the request");
  }
}

void Api::record(const Call& call, const Responder& res) {
  metrics_.count_http(res.status());
  const bool api_call = call.endpoint.rfind("/v1/", 0) == 0 || call.endpoint == "/tokenize" ||
                        call.endpoint == "/detokenize" || call.endpoint == "/infill";
  if (audit_ && api_call) {
    AuditRecord r;
    r.request_id = call.id;
    r.client_ip = call.client_ip;
    r.key_id = call.key_id;
    r.model_version = call.model ? call.model->version : "";
    r.endpoint = call.endpoint;
    r.status = res.status();
    r.prompt_tokens = call.prompt_tokens;
    r.completion_tokens = call.completion_tokens;
    r.latency_s = std::chrono::duration<double>(Clock::now() - call.start).count();
    r.finish_reason = call.finish_reason;
    if (cfg_.audit_log_prompts) r.prompt = call.prompt;
    audit_->write(r);
  }
}

void Api::route(const HttpRequest& req, Responder& res, Call& call) {
  if (!ip_allowed(call.client_ip, allowlist_)) {
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
    if (ready() && !draining()) return json(res, call, 200, R"({"status":"ready"})");
    return json(res, call, 503, draining() ? R"({"status":"draining"})" : R"({"status":"loading"})");
  }
  if (path == "/admin/model") return admin_model(req, res, call);
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
  if (path == "/metrics") return res.send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render());
  if (auto r = admission_.check_ready(call.model != nullptr)) return refuse(res, call, *r);
  if (path == "/v1/models") return models(res, call);
  if (auto r = admission_.take_rate_token(client_key(call))) return refuse(res, call, *r);
  if (path == "/v1/embeddings") {
    if (auto r = admission_.check_draining()) return refuse(res, call, *r);
    return embeddings(req, res, call);
  }
  if (!call.model->engine) {
    return error(res, call, 400, "the model '" + call.model->id + "' is an embedding model: it serves /v1/embeddings only",
                 "model", "embedding_model");
  }
  if (session_path) return sessions(req, res, call);
  if (path == "/tokenize") return tokenize(req, res, call);
  if (path == "/detokenize") return detokenize(req, res, call);
  if (auto r = admission_.check_draining()) return refuse(res, call, *r);
  if (path == "/v1/responses") return responses(req, res, call);
  if (path == "/infill") return infill(req, res, call);
  generate(req, res, call, path == "/v1/chat/completions");
}

// The UI's pages carry no secrets (the API key stays in the browser), so they
// need no key; the headers keep them from running anything but their own code.
void Api::web_asset(Responder& res, const WebAsset& asset) {
  res.send(200, std::string(asset.content_type), std::string(asset.body),
           {{"Cache-Control", "no-cache"},
            {"X-Content-Type-Options", "nosniff"},
            {"X-Frame-Options", "DENY"},
            {"Referrer-Policy", "no-referrer"},
            {"Content-Security-Policy",
             "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
             "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"}});
}

void Api::admin_model(const HttpRequest& req, Responder& res, Call& call) {
  if (cfg_.admin_keys.empty()) return error(res, call, 403, "the admin API is disabled (no admin_keys)", "", "admin_disabled");
  const auto auth = req.find(http::field::authorization);
  const std::string token = auth == req.end() ? "" : bearer_token(std::string(auth->value()));
  const int idx = token.empty() ? -1 : match_api_key(token, cfg_.admin_keys);
  if (idx < 0) {
    audit_event("auth_failed", call, "admin key required for /admin/model");
    return error(res, call, 401, "an admin key is required", "", "invalid_api_key");
  }
  call.key_id = "admin#" + std::to_string(idx);
  nlohmann::json b;
  if (ApiError e = parse_json_object(req.body(), b); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  Fields f(b);
  std::string version, model_path, sha256;
  for (auto [key, out] : {std::pair{"version", &version}, {"model", &model_path}, {"sha256", &sha256}}) {
    if (ApiError e = f.opt_string(key, 4096, *out); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  }
  const bool by_version = !version.empty();
  const bool by_path = !model_path.empty();
  if (by_version == by_path) {
    return error(res, call, 400,
                 "body must be {\"version\": NAME} or {\"model\": PATH, \"sha256\": optional}", "model");
  }
  Expected<ModelRef> ref = ModelRef{};
  if (by_version) {
    std::string dir;
    {
      std::lock_guard<std::mutex> lock(model_mu_);
      dir = model_dir_;
    }
    ref = model_ref_for_version(dir, version);
  } else {
    ref->path = model_path;
    ref->sha256 = sha256;
  }
  Expected<double> secs = ref.ok() ? switch_model(*ref) : Expected<double>(ref.status());
  const std::string target = by_version ? "version " + version : "file " + model_path;
  if (!secs.ok()) {
    audit_event("admin_model_switch_failed", call, target + ": " + secs.status().message());
    ModelPtr cur = model();
    return error(res, call, 422, "model switch failed, still serving '" + (cur ? cur->version : std::string("-")) +
                 "': " + secs.status().message(), "model", "model_load_failed");
  }
  ModelPtr now = model();
  // Whether a restart that follows ACTIVE comes back to this version.
  auto active = ref->model_dir.empty() ? Expected<std::string>(NotFound("")) : read_active_model_version(ref->model_dir);
  const bool recorded = active.ok() && *active == now->version;
  audit_event("admin_model_switch", call, target,
              {{"version", now->version}, {"sha256", now->sha256}, {"recorded_active", recorded ? "yes" : "no"}});
  json(res, call, 200, dump(nlohmann::json{{"model", now->id}, {"version", now->version}, {"sha256", now->sha256},
                                           {"switch_seconds", *secs}, {"recorded_active", recorded}}));
}

std::string Api::client_key(const Call& call) { return call.key_id != "-" ? call.key_id : call.client_ip; }

void Api::refuse(Responder& res, Call& call, const serving::Refusal& r) {
  Headers extra;
  if (r.retry_after_s > 0) extra.push_back({"Retry-After", std::to_string((int)std::ceil(r.retry_after_s))});
  error(res, call, r.exhausted() ? 429 : 503, r.message, "", r.code, extra);
}

void Api::audit_event(const std::string& kind, const Call& call, const std::string& detail,
                      std::map<std::string, std::string> fields) {
  if (!audit_) return;
  AuditEvent e;
  e.kind = kind;
  e.client_ip = call.client_ip;
  e.key_id = call.key_id;
  e.detail = detail;
  e.fields = std::move(fields);
  e.fields["endpoint"] = call.endpoint;
  e.fields["request_id"] = call.id;
  if (Status st = audit_->write_event(e); !st.ok()) log(LogLevel::Error, "audit log write failed", {{"error", st.message()}});
}

// One entry per served name (aliases of the same weights), as vLLM lists them.
void Api::models(Responder& res, Call& call) {
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& name : call.model->names) {
    data.push_back({{"id", name},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "stride"},
                    {"root", call.model->id},
                    {"max_model_len", call.model->encoder ? (int64_t)call.model->encoder->model().max_tokens()
                                                          : cfg_.max_context_length},
                    {"version", call.model->version},
                    {"sha256", call.model->sha256}});
  }
  json(res, call, 200, dump(nlohmann::json{{"object", "list"}, {"data", data}}));
}

void Api::tokenize(const HttpRequest& req, Responder& res, Call& call) {
  nlohmann::json b;
  TokenizeCall t;
  ApiError e = parse_json_object(req.body(), b);
  if (e.ok()) e = parse_tokenize(b, t);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  const Tokenizer& tok = *call.model->engine->tokenizer();
  const auto ids = tok.encode(t.text, t.add_special && tok.add_bos_default(), t.parse_special);
  call.prompt_tokens = (int)ids.size();
  json(res, call, 200,
       dump(nlohmann::json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", cfg_.max_context_length}}));
}

void Api::detokenize(const HttpRequest& req, Responder& res, Call& call) {
  nlohmann::json b;
  std::vector<int32_t> ids;
  const Tokenizer& tok = *call.model->engine->tokenizer();
  ApiError e = parse_json_object(req.body(), b);
  if (e.ok()) e = parse_detokenize(b, tok.n_vocab(), (size_t)cfg_.max_context_length, ids);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  json(res, call, 200, dump(nlohmann::json{{"prompt", tok.decode(ids)}}));
}

}  // namespace stride::server
