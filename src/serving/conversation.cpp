#include "serving/conversation.h"

#include "serving/tool_format_mistral.h"
#include "serving/tool_template_values.h"

namespace stride::serving {

ToolFormat tool_format_of(const Expected<ChatTemplate>& chat) {
  return chat.ok() && chat.value().jinja ? chat.value().tool_format : ToolFormat::Generic;
}

void add_tool_parts(const ClientMessage& in, ToolFormat format, ToolCallNames& names, ChatMessage& out) {
  const bool native = format != ToolFormat::Generic;
  // Mistral templates accept only 9-character call ids.
  const bool mistral = format == ToolFormat::MistralJson || format == ToolFormat::MistralArgs;
  if (in.role == "tool") {
    std::string name = in.name;
    if (name.empty()) {
      if (auto it = names.find(in.tool_call_id); it != names.end()) name = it->second;
    }
    if (native) {
      out.tool_call_id = mistral ? mistral_call_id(in.tool_call_id) : in.tool_call_id;
      out.name = name;
      return;
    }
    out.role = "user";
    out.content = tool_result_text(in.tool_call_id, name, out.content);
    return;
  }
  if (in.tool_calls.empty()) return;
  std::vector<ToolCall> calls = in.tool_calls;
  for (ToolCall& c : calls) {
    if (!c.id.empty()) names[c.id] = c.name;
    if (mistral) c.id = mistral_call_id(c.id);
  }
  if (native) {
    out.tool_calls = tool_calls_template_value(calls);
    return;
  }
  const std::string calls_text = tool_calls_text(calls);
  out.content = out.content.empty() ? calls_text : out.content + "\n\n" + calls_text;
}

void add_tools_system_text(std::vector<ChatMessage>& messages, const std::vector<ToolSpec>& tools,
                           const ToolChoice& choice) {
  const std::string text = tools_system_text(tools, choice);
  if (text.empty()) return;
  if (!messages.empty() && (messages[0].role == "system" || messages[0].role == "developer")) {
    messages[0].content = messages[0].content.empty() ? text : messages[0].content + "\n\n" + text;
  } else {
    messages.insert(messages.begin(), ChatMessage{"system", text});
  }
}

namespace {

// chat_template_kwargs, with reasoning_effort (unless the kwargs set it) and
// the tools a native template renders (tool_choice 'none': it does not see them).
jinja::Value template_variables(const GenerationRequest& g, bool native) {
  jinja::Value vars = g.template_kwargs;
  const auto set = [&](const char* key, jinja::Value v, bool keep_existing) {
    jinja::DictData d = vars.is(jinja::ValueKind::Dict) ? vars.as_dict() : jinja::DictData{};
    if (!keep_existing || !d.find(key)) d.set(key, std::move(v));
    vars = jinja::Value::dict(std::move(d));
  };
  if (!g.reasoning_effort.empty()) set("reasoning_effort", jinja::Value(jinja::Str(g.reasoning_effort, true)), true);
  if (native && g.tools.active()) set("tools", g.tools.template_value, false);
  return vars;
}

}  // namespace

Expected<RenderedChat> render_conversation(const GenerationRequest& g, const ChatTemplate& chat, ToolFormat format) {
  std::vector<ChatMessage> msgs(g.messages.size());
  ToolCallNames names;
  for (size_t i = 0; i < g.messages.size(); ++i) {
    const ClientMessage& m = g.messages[i];
    msgs[i].role = m.role;
    msgs[i].content = m.content;
    msgs[i].thinking = m.thinking;
    add_tool_parts(m, format, names, msgs[i]);
  }
  const bool native = format != ToolFormat::Generic;
  if (!native) add_tools_system_text(msgs, g.tools.tools, g.tools.choice);
  return render_chat_marked(chat, msgs, template_variables(g, native), g.add_generation_prompt);
}

}  // namespace stride::serving
