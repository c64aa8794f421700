// GET /v1/models and GET /v1/models/{model}: the served names, in OpenAI's
// model object (with vLLM's extra members).
#include <string>

#include "http/api_models.h"
#include "http/openai_request.h"
#include "http/openai_response.h"

namespace stride::server {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A path segment with its %XX escapes decoded (names such as "team/default"
// arrive as "team%2Fdefault"); a malformed escape stays as it is.
std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const int hi = s[i] == '%' && i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
    if (lo < 0) {
      out += s[i];
      continue;
    }
    out += (char)(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

nlohmann::json ModelsHandler::model_object(const ApiCall& call, const std::string& name) const {
  const ModelHandle& m = *call.model;
  return {{"id", name},
          {"object", "model"},
          {"created", 0},
          {"owned_by", "stride"},
          {"root", m.id},
          {"max_model_len", m.encoder ? (int64_t)m.encoder->model().max_tokens() : cfg_.max_context_length},
          {"version", m.version},
          {"sha256", m.sha256}};
}

// One entry per served name (aliases of the same weights), as vLLM lists them.
void ModelsHandler::models(Responder& res, ApiCall& call) {
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& name : call.model->names) data.push_back(model_object(call, name));
  json(res, call, 200, dump(nlohmann::json{{"object", "list"}, {"data", data}}));
}

void ModelsHandler::retrieve_model(Responder& res, ApiCall& call, std::string_view escaped_name) {
  const std::string name = percent_decoded(escaped_name);
  if (name.empty()) return error(res, call, 404, "no model named: /v1/models/{model}", "model", "model_not_found");
  // The same 404 as a generation naming another model: it lists the served names.
  const ApiError e = check_model_name(name, call.model->names);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  json(res, call, 200, dump(model_object(call, name)));
}

}  // namespace stride::server
