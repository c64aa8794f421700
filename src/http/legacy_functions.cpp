#include "http/legacy_functions.h"

#include <string>

namespace stride::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

bool present(const json& b, const char* key) {
  auto it = b.find(key);
  return it != b.end() && !it->is_null();
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
}

// An error about the tools the legacy fields became, named as the client wrote them.
ApiError legacy_names(ApiError e) {
  for (std::string* s : {&e.param, &e.message}) {
    replace_all(*s, "tools[", "functions[");
    replace_all(*s, "].function", "]");
    replace_all(*s, "tool_choice.function", "function_call");
    replace_all(*s, "tool_choice", "function_call");
    replace_all(*s, "'tools'", "'functions'");
  }
  return e;
}

ApiError check_legacy(const json& b) {
  if (present(b, "functions")) {
    const json& fs = b["functions"];
    if (present(b, "tools")) return bad_field("functions", "give either 'tools' or the deprecated 'functions', not both");
    if (!fs.is_array() || fs.empty() || fs.size() > 128) {
      return bad_field("functions", "'functions' must be a list of 1 to 128 functions");
    }
    for (size_t i = 0; i < fs.size(); ++i) {
      if (!fs[i].is_object()) {
        const std::string p = "functions[" + std::to_string(i) + "]";
        return bad_field(p, "'" + p + "' must be an object");
      }
    }
  }
  if (!present(b, "function_call")) return {};
  const json& fc = b["function_call"];
  if (present(b, "tool_choice")) {
    return bad_field("function_call", "give either 'tool_choice' or the deprecated 'function_call', not both");
  }
  const bool mode = fc.is_string() && (fc == "none" || fc == "auto");
  const bool named = fc.is_object() && fc.contains("name") && fc["name"].is_string();
  if (!mode && !named) return bad_field("function_call", "'function_call' must be 'none', 'auto' or {\"name\": NAME}");
  return {};
}

// The legacy fields rewritten as tools / tool_choice (json or ordered_json).
template <typename J>
void as_tools(J& b) {
  if (b.contains("functions") && !b["functions"].is_null()) {
    J tools = J::array();
    for (const auto& f : b["functions"]) tools.push_back({{"type", "function"}, {"function", f}});
    b["tools"] = std::move(tools);
    b["parallel_tool_calls"] = false;  // the legacy reply holds one call
  }
  b.erase("functions");
  if (b.contains("function_call") && !b["function_call"].is_null()) {
    const J& fc = b["function_call"];
    J choice = fc.is_string() ? fc : J{{"type", "function"}, {"function", {{"name", fc["name"]}}}};
    b["tool_choice"] = std::move(choice);  // may move the members fc refers to
  }
  b.erase("function_call");
}

}  // namespace

ApiError read_chat_tools(const json& b, std::string_view body_text, ToolsRequest& out) {
  if (!present(b, "functions") && !present(b, "function_call")) return read_tools(b, body_text, out);
  STRIDE_API_TRY(check_legacy(b));
  json tools_body = b;
  as_tools(tools_body);
  ojson ordered = ojson::parse(body_text, nullptr, false);
  std::string ordered_text;
  if (ordered.is_object()) {
    as_tools(ordered);
    ordered_text = ordered.dump();
  }
  STRIDE_API_TRY(legacy_names(read_tools(tools_body, ordered_text, out)));
  out.legacy_functions = present(b, "functions");
  return {};
}

void use_legacy_function_call(json& completion) {
  json& choice = completion["choices"][0];
  json& msg = choice["message"];
  if (!msg.contains("tool_calls") || !msg["tool_calls"].is_array() || msg["tool_calls"].empty()) return;
  const json& fn = msg["tool_calls"][0]["function"];
  msg["function_call"] = {{"name", fn["name"]}, {"arguments", fn["arguments"]}};
  msg.erase("tool_calls");
  if (choice["finish_reason"] == "tool_calls") choice["finish_reason"] = "function_call";
}

json legacy_function_delta(const json& delta) {
  if (!delta.contains("tool_calls")) return delta;
  json out = delta;
  out.erase("tool_calls");
  for (const json& part : delta["tool_calls"]) {
    if (part.value("index", 0) != 0 || !part.contains("function")) continue;
    json fc = json::object();
    if (part["function"].contains("name")) fc["name"] = part["function"]["name"];
    fc["arguments"] = part["function"].value("arguments", "");
    out["function_call"] = std::move(fc);
  }
  return out;
}

}  // namespace stride::server
