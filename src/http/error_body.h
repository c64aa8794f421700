#pragma once
// The one shape of every error the HTTP front end sends, plain responses and
// SSE events alike: OpenAI's error object,
//   {"error": {"message": "...", "type": "...", "param": null | "...", "code": null | "..."}}
// with the type following the HTTP status.
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace stride::server {

// HTTP status of a Status from the engine.
int http_status_for(const Status& st);
// OpenAI's error "type" of an HTTP status.
const char* error_type_for(int http_status);
// The error body; an empty param or code is null.
nlohmann::json error_body(int http_status, std::string_view message, std::string_view param = {},
                          std::string_view code = {});

}  // namespace stride::server
