#include "http/api_admin.h"

#include <utility>

#include "http/json_fields.h"
#include "http/openai_response.h"
#include "loader/model_versions.h"

namespace stride::server {

void AdminHandler::admin_model(const HttpRequest& req, Responder& res, ApiCall& call) {
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
  ServedModel& served = ctx_.served;
  Expected<ModelRef> ref = ModelRef{};
  if (by_version) {
    ref = model_ref_for_version(served.model_dir(), version);
  } else {
    ref->path = model_path;
    ref->sha256 = sha256;
  }
  Expected<double> secs = ref.ok() ? served.switch_model(*ref) : Expected<double>(ref.status());
  const std::string target = by_version ? "version " + version : "file " + model_path;
  if (!secs.ok()) {
    audit_event("admin_model_switch_failed", call, target + ": " + secs.status().message());
    ModelPtr cur = served.model();
    return error(res, call, 422, "model switch failed, still serving '" + (cur ? cur->version : std::string("-")) +
                 "': " + secs.status().message(), "model", "model_load_failed");
  }
  ModelPtr now = served.model();
  // Whether a restart that follows ACTIVE comes back to this version.
  auto active = ref->model_dir.empty() ? Expected<std::string>(NotFound("")) : read_active_model_version(ref->model_dir);
  const bool recorded = active.ok() && *active == now->version;
  audit_event("admin_model_switch", call, target,
              {{"version", now->version}, {"sha256", now->sha256}, {"recorded_active", recorded ? "yes" : "no"}});
  json(res, call, 200, dump(nlohmann::json{{"model", now->id}, {"version", now->version}, {"sha256", now->sha256},
                                           {"switch_seconds", *secs}, {"recorded_active", recorded}}));
}

}  // namespace stride::server
