#include "serving/tool_calls.h"

#include <nlohmann/json.hpp>

#include "grammar/gbnf_text.h"
#include "grammar/grammar_compose.h"
#include "grammar/json_schema.h"
#include "jinja/json.h"

namespace stride::serving {

namespace {

using ojson = nlohmann::ordered_json;

// JSON text as it came, when it is JSON; else the text as a JSON string.
ojson json_or_string(const std::string& text) {
  ojson j = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? ojson(text) : j;
}

// Python's json.dumps spacing ({"a": 1, "b": [2, 3]}), which models have
// seen most and which the call grammar's blank space allows.
std::string dumps(const ojson& j) { return jinja::dumps(jinja::from_json(j, false), jinja::JsonDumpOptions{}); }

std::string quoted(const std::string& s) { return dumps(ojson(s)); }

}  // namespace

std::string tools_system_text(const std::vector<ToolSpec>& tools, const ToolChoice& choice) {
  if (choice.mode == ToolChoiceMode::None || tools.empty()) return {};
  std::string out =
      "You can call the following tools. Each line describes one: its name, what it does, and a JSON schema of "
      "its arguments.\n";
  for (const ToolSpec& t : tools) {
    ojson line = {{"name", t.name}};
    if (!t.description.empty()) line["description"] = t.description;
    line["parameters"] = json_or_string(t.parameters);
    out += dumps(line) + "\n";
  }
  out += "\nTo call tools, reply with only a JSON object of this form and nothing else:\n";
  out += std::string(kToolCallsOpen) + "{\"name\": \"<tool name>\", \"arguments\": {<the arguments>}}]}\n";
  out += choice.parallel ? "List several calls to call several tools at once.\n" : "Call one tool at a time.\n";
  switch (choice.mode) {
    case ToolChoiceMode::Auto: out += "When no tool is needed, answer the user in plain text.\n"; break;
    case ToolChoiceMode::Required: out += "You must call a tool now.\n"; break;
    case ToolChoiceMode::Named: out += "You must call the tool " + quoted(choice.name) + " now.\n"; break;
    case ToolChoiceMode::None: break;
  }
  out += "Each result comes back as {\"tool_result\": {\"id\": ..., \"name\": ..., \"content\": ...}}.";
  return out;
}

std::string tool_calls_text(const std::vector<ToolCall>& calls) {
  std::string out = kToolCallsOpen;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i) out += ", ";
    out += "{\"name\": " + quoted(calls[i].name) +
           ", \"arguments\": " + dumps(json_or_string(calls[i].arguments)) + "}";
  }
  return out + "]}";
}

std::string tool_result_text(const std::string& id, const std::string& name, const std::string& content) {
  ojson r = ojson::object();
  if (!id.empty()) r["id"] = id;
  if (!name.empty()) r["name"] = name;
  r["content"] = content;
  return dumps(ojson{{"tool_result", r}});
}

Expected<ToolCallRules> tool_call_rules(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                        const std::string& arguments_key) {
  if (choice.mode == ToolChoiceMode::None) return InvalidArgument("tool_choice 'none' has no call grammar");
  if (tools.empty()) return InvalidArgument("there are no tools to call");
  ToolCallRules out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec& t = tools[i];
    if (choice.mode == ToolChoiceMode::Named && t.name != choice.name) continue;
    const auto fail = [&](const std::string& why) {
      return InvalidArgument("tools[" + std::to_string(i) + "] ('" + t.name + "'): " + why);
    };
    const ojson ordered = ojson::parse(t.parameters, nullptr, false);
    if (ordered.is_discarded()) return fail("the parameters are not JSON");
    grammar::SchemaOptions opts;
    opts.strict = t.strict;
    opts.property_order = grammar::property_order_of(ordered);
    auto schema_gbnf = grammar::json_schema_to_gbnf(nlohmann::json::parse(t.parameters), opts);
    if (!schema_gbnf.ok()) return fail(schema_gbnf.status().message());
    // Tool rules are "t<i>-..."; the frame's own names never start so.
    const std::string prefix = "t" + std::to_string(i) + "-";
    grammar::GrammarLimits limits;
    limits.max_text_bytes = 8u << 20;
    auto embedded = grammar::gbnf_prefixed(*schema_gbnf, prefix, limits);
    if (!embedded.ok()) return fail(embedded.status().message());
    out.rules += *embedded;
    out.rules += prefix + "call ::= " +
                 grammar::gbnf_literal("{\"name\": " + quoted(t.name) + ", " + quoted(arguments_key) + ": ") + " " + prefix +
                 "root \"}\"\n";
    out.call += (out.call.empty() ? "" : " | ") + prefix + "call";
    out.allowed.emplace_back(t.name, prefix);
  }
  if (out.call.empty()) return InvalidArgument("tool_choice names '" + choice.name + "', which is not a tool");
  return out;
}

std::string text_or_calls_root(const std::string& calls) {
  return "root ::= [ \\t\\r\\n]{0,8} " + calls + " | text\n" +
         "text ::= [ \\t\\r\\n]* ( [^{ \\t\\r\\n] .* )?\n";
}

Expected<std::string> tool_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice) {
  STRIDE_ASSIGN_OR_RETURN(ToolCallRules calls, tool_call_rules(tools, choice));
  const std::string open = grammar::gbnf_literal(kToolCallsOpen);
  const bool many = choice.parallel && choice.mode != ToolChoiceMode::Named;
  std::string frame = "call ::= " + calls.call + "\n";
  const std::string more = "( \", \" call ){0," + std::to_string(kMaxCallsPerReply - 1) + "} ";
  frame += "calls ::= " + open + " call " + (many ? more : "") + "\"]}\"\n";
  frame += choice.mode == ToolChoiceMode::Auto ? text_or_calls_root("calls") : "root ::= calls\n";
  return frame + calls.rules;
}

}  // namespace stride::serving
