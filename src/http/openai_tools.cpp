#include "http/openai_tools.h"

#include "serving/tool_template_values.h"

namespace stride::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// OpenAI's rule for function names.
bool valid_function_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// A string field of an object at `path` ("tools[0].function"); absent or null
// leaves `out` unchanged unless `required`.
ApiError string_at(const json& obj, const std::string& path, const char* key, size_t max_bytes, bool required,
                   std::string& out) {
  const std::string param = path + "." + key;
  const json* v = Fields(obj).find(key);
  if (!v) return required ? bad_field(param, "'" + param + "' is required") : ApiError{};
  if (!v->is_string()) return bad_field(param, "'" + param + "' must be a string");
  if (v->get_ref<const std::string&>().size() > max_bytes) {
    return bad_field(param, "'" + param + "' must be at most " + std::to_string(max_bytes) + " bytes");
  }
  out = v->get<std::string>();
  return {};
}

ApiError function_type_at(const json& obj, const std::string& path) {
  const json* t = Fields(obj).find("type");
  if (!t || *t != "function") return bad_field(path + ".type", "'" + path + ".type' must be 'function'");
  return {};
}

// The object at obj[key] (the parameters of a tool), with its key order.
const ojson* ordered_member(const ojson* obj, const char* key) {
  if (!obj || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

ApiError read_tool(const json& t, const ojson* ordered, size_t i, size_t& total_bytes, serving::ToolSpec& out) {
  const std::string path = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) return bad_field(path, "'" + path + "' must be an object");
  STRIDE_API_TRY(function_type_at(t, path));
  const json* f = Fields(t).find("function");
  const std::string fpath = path + ".function";
  if (!f || !f->is_object()) return bad_field(fpath, "'" + fpath + "' must be an object");
  STRIDE_API_TRY(string_at(*f, fpath, "name", 64, true, out.name));
  if (!valid_function_name(out.name)) {
    return bad_field(fpath + ".name", "'" + fpath + ".name' must be 1-64 letters, digits, '_' or '-'");
  }
  STRIDE_API_TRY(string_at(*f, fpath, "description", kMaxToolDescriptionBytes, false, out.description));
  if (ApiError e = Fields(*f).opt_bool("strict", out.strict); !e.ok()) {
    return bad_field(fpath + ".strict", "'" + fpath + ".strict' must be a boolean");
  }
  if (const json* p = Fields(*f).find("parameters")) {
    const std::string ppath = fpath + ".parameters";
    if (!p->is_object()) return bad_field(ppath, "'" + ppath + "' must be a JSON Schema object");
    const ojson* op = ordered_member(ordered_member(ordered, "function"), "parameters");
    out.parameters = (op ? op->dump() : p->dump());
    if (out.parameters.size() > kMaxToolSchemaBytes) {
      return bad_field(ppath, "'" + ppath + "' must be at most " + std::to_string(kMaxToolSchemaBytes) +
                                  " bytes as compact JSON");
    }
  }
  total_bytes += out.parameters.size() + out.description.size();
  if (total_bytes > kMaxToolsBytes) {
    return bad_field("tools", "the tools' schemas and descriptions must be at most " + std::to_string(kMaxToolsBytes) +
                                  " bytes in all");
  }
  return {};
}

ApiError read_tool_choice(const json& b, ToolsRequest& out) {
  using serving::ToolChoiceMode;
  const json* c = Fields(b).find("tool_choice");
  const bool has_tools = !out.tools.empty();
  out.choice.mode = has_tools ? ToolChoiceMode::Auto : ToolChoiceMode::None;
  if (!c) return {};
  if (c->is_string()) {
    const std::string& s = c->get_ref<const std::string&>();
    if (s == "none") {
      out.choice.mode = ToolChoiceMode::None;
    } else if (s == "required") {
      if (!has_tools) return bad_field("tool_choice", "'tool_choice' 'required' needs 'tools'");
      out.choice.mode = ToolChoiceMode::Required;
    } else if (s != "auto") {
      return bad_field("tool_choice", "'tool_choice' must be 'none', 'auto', 'required' or a function");
    }
    return {};
  }
  if (!c->is_object()) {
    return bad_field("tool_choice", "'tool_choice' must be 'none', 'auto', 'required' or a function");
  }
  STRIDE_API_TRY(function_type_at(*c, "tool_choice"));
  const json* f = Fields(*c).find("function");
  if (!f || !f->is_object()) return bad_field("tool_choice.function", "'tool_choice.function' must be an object");
  std::string name;
  STRIDE_API_TRY(string_at(*f, "tool_choice.function", "name", 64, true, name));
  bool known = false;
  for (const auto& t : out.tools) known = known || t.name == name;
  if (!known) {
    return bad_field("tool_choice", "'tool_choice' names the function '" + name + "', which is not in 'tools'");
  }
  out.choice.mode = ToolChoiceMode::Named;
  out.choice.name = name;
  return {};
}

}  // namespace

ApiError read_tools(const json& b, std::string_view body_text, ToolsRequest& out) {
  Fields f(b);
  if (const json* ts = f.find("tools")) {
    if (!ts->is_array()) return bad_field("tools", "'tools' must be a list");
    if (ts->size() > kMaxTools) {
      return bad_field("tools", "at most " + std::to_string(kMaxTools) + " tools are accepted");
    }
    // The parsed body keeps keys sorted; a schema's property order is the client's.
    const ojson doc = ojson::parse(body_text, nullptr, false);
    const ojson* ordered_tools = ordered_member(&doc, "tools");
    if (ordered_tools && ordered_tools->is_array()) out.raw_tools = *ordered_tools;
    size_t total = 0;
    out.tools.resize(ts->size());
    for (size_t i = 0; i < ts->size(); ++i) {
      const ojson* ot = ordered_tools && ordered_tools->is_array() && i < ordered_tools->size() ? &(*ordered_tools)[i]
                                                                                               : nullptr;
      STRIDE_API_TRY(read_tool((*ts)[i], ot, i, total, out.tools[i]));
      for (size_t k = 0; k < i; ++k) {
        if (out.tools[k].name == out.tools[i].name) {
          return bad_field("tools[" + std::to_string(i) + "].function.name",
                           "two tools are named '" + out.tools[i].name + "'");
        }
      }
    }
  }
  STRIDE_API_TRY(f.opt_bool("parallel_tool_calls", out.choice.parallel));
  return read_tool_choice(b, out);
}

serving::ToolsOffer tools_offer(const ToolsRequest& t) {
  serving::ToolsOffer o;
  o.tools = t.tools;
  o.choice = t.choice;
  // tool_choice 'none' offers no tools: no template sees them.
  if (t.active()) o.template_value = serving::tools_template_value(t.raw_tools);
  return o;
}

// The deprecated `function_call` ({name, arguments}) of an assistant turn as
// its one call, with an id a following "function" result refers to.
ApiError read_legacy_call(const json& fc, const std::string& path, size_t index, serving::ClientMessage& msg) {
  const std::string fpath = path + ".function_call";
  if (msg.role != "assistant") return bad_field(fpath, "only assistant messages carry 'function_call'");
  if (!fc.is_object()) return bad_field(fpath, "'" + fpath + "' must be an object");
  serving::ToolCall call;
  STRIDE_API_TRY(string_at(fc, fpath, "name", 256, true, call.name));
  STRIDE_API_TRY(string_at(fc, fpath, "arguments", SIZE_MAX, true, call.arguments));
  call.id = "call_" + std::to_string(index);
  msg.tool_calls.push_back(std::move(call));
  return {};
}

ApiError read_tool_parts(const json& m, size_t index, serving::ClientMessage& msg) {
  const std::string path = "messages[" + std::to_string(index) + "]";
  if (msg.role == "tool") {
    STRIDE_API_TRY(string_at(m, path, "tool_call_id", 256, true, msg.tool_call_id));
    return string_at(m, path, "name", 256, false, msg.name);
  }
  if (msg.role == "function") {  // the deprecated result of a function_call
    STRIDE_API_TRY(string_at(m, path, "name", 256, true, msg.name));
    msg.role = "tool";
    return {};
  }
  const json* tc = Fields(m).find("tool_calls");
  if (const json* fc = Fields(m).find("function_call")) {
    if (tc) return bad_field(path + ".function_call", "give either 'tool_calls' or 'function_call', not both");
    return read_legacy_call(*fc, path, index, msg);
  }
  if (!tc) return {};
  const std::string tpath = path + ".tool_calls";
  if (msg.role != "assistant") return bad_field(tpath, "only assistant messages carry 'tool_calls'");
  if (!tc->is_array() || tc->size() > kMaxToolCallsPerMessage) {
    return bad_field(tpath, "'" + tpath + "' must be a list of at most " + std::to_string(kMaxToolCallsPerMessage) +
                                " calls");
  }
  std::vector<serving::ToolCall>& calls = msg.tool_calls;
  calls.resize(tc->size());
  for (size_t i = 0; i < tc->size(); ++i) {
    const json& c = (*tc)[i];
    const std::string cpath = tpath + "[" + std::to_string(i) + "]";
    if (!c.is_object()) return bad_field(cpath, "'" + cpath + "' must be an object");
    STRIDE_API_TRY(string_at(c, cpath, "id", 256, true, calls[i].id));
    const json* fn = Fields(c).find("function");
    if (!fn || !fn->is_object()) return bad_field(cpath + ".function", "'" + cpath + ".function' must be an object");
    STRIDE_API_TRY(string_at(*fn, cpath + ".function", "name", 256, true, calls[i].name));
    // OpenAI sends arguments as a JSON string; an object is taken too.
    const json* args = Fields(*fn).find("arguments");
    const std::string apath = cpath + ".function.arguments";
    if (!args) {
      calls[i].arguments = "{}";
    } else if (args->is_string()) {
      calls[i].arguments = args->get<std::string>();
    } else if (args->is_object()) {
      calls[i].arguments = args->dump();
    } else {
      return bad_field(apath, "'" + apath + "' must be a string of JSON (or an object)");
    }
    // JSON text inside a string escaped the body's depth check.
    if (json_nesting_depth(calls[i].arguments, kMaxJsonDepth) > kMaxJsonDepth) {
      return bad_field(apath, "'" + apath + "' nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    STRIDE_API_TRY(function_type_at(c, cpath));  // required, as OpenAI's schema has it
  }
  return {};
}

ApiError read_tool_message(const json& m, size_t index, serving::ChatMessage& msg, ToolCallNames& names,
                           serving::ToolFormat format) {
  serving::ClientMessage parts;
  parts.role = msg.role;
  STRIDE_API_TRY(read_tool_parts(m, index, parts));
  serving::add_tool_parts(parts, format, names, msg);
  return {};
}

void add_tools_system_text(std::vector<serving::ChatMessage>& messages, const ToolsRequest& tools) {
  serving::add_tools_system_text(messages, tools.tools, tools.choice);
}

}  // namespace stride::server
