// OpenAI's fields that stride accepts and ignores, and those it refuses; the
// rules each must still meet come from the official schema.
#include <initializer_list>

#include "http/openai_fields.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

ApiError unsupported(const std::string& param, const std::string& message) {
  return bad_field(param, message, "unsupported_parameter");
}

std::string quoted_list(std::initializer_list<const char*> values) {
  std::string s;
  for (const char* v : values) s += std::string(s.empty() ? "" : ", ") + "'" + v + "'";
  return s;
}

// A string field that must be one of `values` (null and absent are fine).
ApiError check_enum(const Fields& f, const char* key, std::initializer_list<const char*> values) {
  const json* v = f.find(key);
  if (!v) return {};
  if (v->is_string()) {
    for (const char* ok : values) {
      if (*v == ok) return {};
    }
  }
  return f.type_error(key, ("one of " + quoted_list(values)).c_str());
}

ApiError check_string(const Fields& f, const char* key, size_t max_chars = SIZE_MAX) {
  std::string ignored;
  return f.opt_string(key, max_chars, ignored);
}

// An object-valued field this server does not implement: any object is
// refused as unsupported, anything else but null is a type error.
ApiError refuse_object(const Fields& f, const char* key, const std::string& why) {
  const json* v = f.find(key);
  if (!v) return {};
  if (!v->is_object()) return f.type_error(key, "an object");
  return unsupported(key, "'" + std::string(key) + "' is not supported: " + why);
}

// modalities: a list of "text" | "audio"; audio output is not implemented.
ApiError check_modalities(const Fields& f) {
  const json* m = f.find("modalities");
  if (!m) return {};
  if (!m->is_array()) return f.type_error("modalities", "a list of 'text' or 'audio'");
  bool audio = false;
  for (const json& x : *m) {
    if (!x.is_string() || (x != "text" && x != "audio")) {
      return bad_field("modalities", "'modalities' entries must be 'text' or 'audio'");
    }
    audio = audio || x == "audio";
  }
  if (audio) return unsupported("modalities", "'modalities' 'audio' is not supported: this server replies in text only");
  return {};
}

ApiError check_shared_ignored(const Fields& f) {
  STRIDE_API_TRY(check_enum(f, "service_tier", {"auto", "default", "flex", "scale", "priority"}));
  STRIDE_API_TRY(check_string(f, "prompt_cache_key"));
  STRIDE_API_TRY(check_enum(f, "prompt_cache_retention", {"in_memory", "24h"}));
  return check_string(f, "safety_identifier", 64);
}

}  // namespace

ApiError check_ignored_fields(const json& body, Endpoint e) {
  Fields f(body);
  STRIDE_API_TRY(check_string(f, "user"));
  bool flag = false;
  switch (e) {
    case Endpoint::Chat:
      STRIDE_API_TRY(check_shared_ignored(f));
      STRIDE_API_TRY(check_metadata(body));
      STRIDE_API_TRY(check_enum(f, "verbosity", {"low", "medium", "high"}));
      STRIDE_API_TRY(f.opt_bool("store", flag));
      return f.opt_bool("parallel_tool_calls", flag);
    case Endpoint::Responses:
      STRIDE_API_TRY(check_shared_ignored(f));
      STRIDE_API_TRY(check_metadata(body));
      for (const char* key : {"store", "parallel_tool_calls"}) STRIDE_API_TRY(f.opt_bool(key, flag));
      return {};
    case Endpoint::Completions:
    case Endpoint::Embeddings: break;
  }
  return {};
}

ApiError refuse_unimplemented(const json& body, Endpoint e) {
  if (e != Endpoint::Chat) return {};
  Fields f(body);
  STRIDE_API_TRY(check_modalities(f));
  STRIDE_API_TRY(refuse_object(f, "audio", "this server replies in text only"));
  STRIDE_API_TRY(refuse_object(f, "prediction", "predicted outputs are not implemented"));
  STRIDE_API_TRY(refuse_object(f, "web_search_options", "this server does not search the web"));
  bool store = false;
  STRIDE_API_TRY(f.opt_bool("store", store));
  if (store) return unsupported("store", "'store': true is not supported: this server stores no completions");
  return {};
}

}  // namespace stride::server
