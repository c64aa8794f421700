#include "http/error_body.h"

namespace stride::server {

int http_status_for(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 503;
    case StatusCode::kUnsupported: return 503;
    default: return 500;
  }
}

const char* error_type_for(int s) {
  switch (s) {
    case 400: case 404: case 405: case 413: case 422: case 431: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return "server_error";
  }
}

nlohmann::json error_body(int http_status, std::string_view message, std::string_view param, std::string_view code) {
  const auto or_null = [](std::string_view v) { return v.empty() ? nlohmann::json() : nlohmann::json(v); };
  return {{"error",
           {{"message", message}, {"type", error_type_for(http_status)}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

}  // namespace stride::server
