#include "serving/chat_template.h"

#include <algorithm>

#include "jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace stride::serving {

namespace {

bool has(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// SmolLM2-style templates: `{{ '<|im_start|>system\n...<|im_end|>\n' }}` when
// the first message is not a system one.
std::string chatml_default_system(const std::string& t) {
  const std::string open = "'<|im_start|>system\n";
  const size_t at = t.find(open);
  if (at == std::string::npos) return {};
  const size_t from = at + open.size();
  const size_t end = t.find("<|im_end|>", from);
  if (end == std::string::npos) return {};
  const std::string text = t.substr(from, end - from);
  // Only a literal: anything templated ('+ message' ...) is not a default.
  if (text.find('\'') != std::string::npos || text.find('{') != std::string::npos) return {};
  return text;
}

// The system prompt (if any) and the remaining turns.
std::pair<std::string, std::vector<ChatMessage>> split_system(const std::vector<ChatMessage>& m) {
  std::string sys;
  std::vector<ChatMessage> rest;
  for (const auto& msg : m) {
    if (msg.role == "system") {
      sys += sys.empty() ? msg.content : "\n\n" + msg.content;
    } else {
      rest.push_back(msg);
    }
  }
  return {sys, rest};
}

}  // namespace

const char* chat_family_name(ChatFamily f) {
  switch (f) {
    case ChatFamily::ChatML: return "chatml";
    case ChatFamily::Llama3: return "llama3";
    case ChatFamily::Llama2: return "llama2";
    case ChatFamily::Mistral: return "mistral";
    case ChatFamily::Gemma: return "gemma";
    case ChatFamily::Phi3: return "phi3";
  }
  return "unknown";
}

namespace {

Expected<ChatTemplate> detect_family(const std::string& t, const std::string& arch) {
  ChatTemplate out;
  if (t.empty()) {
    if (arch.rfind("gemma", 0) == 0) {
      out.family = ChatFamily::Gemma;
      return out;
    }
    return NotFound("the model has no chat template (tokenizer.chat_template) and architecture '" + arch +
                    "' has no default; use /v1/completions");
  }
  if (has(t, "<|im_start|>")) {
    out.family = ChatFamily::ChatML;
    out.default_system = chatml_default_system(t);
  } else if (has(t, "<|start_header_id|>")) {
    out.family = ChatFamily::Llama3;
  } else if (has(t, "<start_of_turn>")) {
    out.family = ChatFamily::Gemma;
  } else if (has(t, "<|assistant|>") && has(t, "<|end|>")) {
    out.family = ChatFamily::Phi3;
  } else if (has(t, "[INST]")) {
    out.family = has(t, "<<SYS>>") ? ChatFamily::Llama2 : ChatFamily::Mistral;
  } else {
    return Unsupported("unknown chat template family (supported: chatml, llama3, llama2, mistral, gemma, phi3)");
  }
  return out;
}

// The context a template sees: the messages (client text) and the server's values.
jinja::Value chat_context(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                          const jinja::Value& extra, bool add_generation_prompt) {
  std::vector<jinja::Value> list;
  for (const auto& m : messages) {
    jinja::DictData d;
    // Roles are checked against a fixed list before this: template text, not client text.
    d.set("role", jinja::Value(m.role));
    d.set("content", jinja::Value(jinja::Str(m.content, /*all_literal=*/true)));
    if (!m.tool_calls.is(jinja::ValueKind::Undefined)) d.set("tool_calls", m.tool_calls);
    if (!m.tool_call_id.empty()) d.set("tool_call_id", jinja::Value(jinja::Str(m.tool_call_id, true)));
    if (!m.name.empty()) d.set("name", jinja::Value(jinja::Str(m.name, true)));
    if (m.thinking) {  // gpt-oss reads `thinking`, Qwen3-style templates `reasoning_content`
      d.set("thinking", jinja::Value(jinja::Str(*m.thinking, true)));
      d.set("reasoning_content", jinja::Value(jinja::Str(*m.thinking, true)));
    }
    list.push_back(jinja::Value::dict(std::move(d)));
  }
  jinja::DictData ctx;
  if (extra.is(jinja::ValueKind::Dict)) ctx = extra.as_dict();
  ctx.set("messages", jinja::Value::list(std::move(list)));
  ctx.set("bos_token", jinja::Value(t.bos_token));
  ctx.set("eos_token", jinja::Value(t.eos_token));
  ctx.set("add_generation_prompt", jinja::Value(add_generation_prompt));
  return jinja::Value::dict(std::move(ctx));
}

Expected<RenderedChat> render_jinja(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                    const jinja::Value& extra = {}, bool add_generation_prompt = true) {
  STRIDE_ASSIGN_OR_RETURN(jinja::Rendered r,
                          t.jinja->render(chat_context(t, messages, extra, add_generation_prompt)));
  RenderedChat out;
  size_t skip = 0;
  // The tokenizer adds BOS itself: a template's leading bos_token would double it.
  if (t.drop_leading_bos && !t.bos_token.empty() && r.text.compare(0, t.bos_token.size(), t.bos_token) == 0) {
    skip = t.bos_token.size();
  }
  out.text = r.text.substr(skip);
  for (const jinja::Span& s : r.literal) {
    if (s.end <= skip) continue;
    out.literal.push_back({std::max(s.begin, skip) - skip, s.end - skip});
  }
  return out;
}

// A template is used when it parses and a one-message chat renders with the
// message's text inside client text (a fragment such as "<|im_start|>{{ x }}"
// is a marker, not a template).
std::shared_ptr<const jinja::Template> usable_template(const std::string& source, const ChatTemplate& t) {
  auto parsed = jinja::Template::parse(source);
  if (!parsed.ok()) return nullptr;
  ChatTemplate probe = t;
  probe.jinja = std::make_shared<const jinja::Template>(std::move(parsed).value());
  const std::string text = "Hello, who are you?";
  auto r = render_jinja(probe, {{"user", text}});
  if (!r.ok()) return nullptr;
  for (const TextSpan& s : r->literal) {
    if (std::string_view(r->text).substr(s.begin, s.end - s.begin).find(text) != std::string_view::npos) {
      return probe.jinja;
    }
  }
  return nullptr;
}

}  // namespace

Expected<ChatTemplate> detect_chat_template(const std::string& t, const std::string& arch, const ChatTokens& tokens) {
  Expected<ChatTemplate> family = detect_family(t, arch);
  ChatTemplate out = family.ok() ? family.value() : ChatTemplate{};
  out.has_family = family.ok();
  out.bos_token = tokens.bos;
  out.eos_token = tokens.eos;
  out.drop_leading_bos = tokens.tokenizer_adds_bos;
  if (!t.empty()) out.jinja = usable_template(t, out);
  if (!out.jinja && !family.ok()) return family.status();
  if (out.jinja) out.tool_format = detect_tool_format(t);
  return out;
}

ChatTokens chat_tokens_of(const Tokenizer& tok) {
  ChatTokens out;
  if (tok.bos_id() >= 0) out.bos = tok.token_to_piece_special(tok.bos_id());
  if (tok.eos_id() >= 0) out.eos = tok.token_to_piece_special(tok.eos_id());
  out.tokenizer_adds_bos = tok.add_bos_default();
  return out;
}

std::string chat_template_name(const ChatTemplate& t) {
  if (!t.jinja) return chat_family_name(t.family);
  return t.has_family ? std::string("jinja (") + chat_family_name(t.family) + " fallback)" : "jinja";
}

namespace {

// Builds a prompt from trusted markup and client text, recording the latter.
class PromptBuilder {
 public:
  PromptBuilder& markup(const std::string& s) {
    out_.text += s;
    return *this;
  }
  PromptBuilder& client(const std::string& s) {
    if (!s.empty()) out_.literal.push_back({out_.text.size(), out_.text.size() + s.size()});
    out_.text += s;
    return *this;
  }
  RenderedChat take() { return std::move(out_); }

 private:
  RenderedChat out_;
};

}  // namespace

Expected<RenderedChat> render_chat_marked(const ChatTemplate& t, const std::vector<ChatMessage>& in,
                                          const jinja::Value& extra, bool add_generation_prompt) {
  if (in.empty()) return InvalidArgument("messages must not be empty");
  std::vector<ChatMessage> messages;
  bool native_tools = false;  // tool turns only the template itself can render
  for (const auto& m : in) {
    ChatMessage c = m;
    if (c.role == "developer") c.role = "system";
    const bool tool_role = c.role == "tool" && t.jinja && t.tool_format != ToolFormat::Generic;
    if (c.role != "system" && c.role != "user" && c.role != "assistant" && !tool_role) {
      return InvalidArgument("unsupported message role '" + m.role + "'");
    }
    native_tools = native_tools || tool_role || !c.tool_calls.is(jinja::ValueKind::Undefined);
    messages.push_back(std::move(c));
  }
  if (t.jinja) {
    Expected<RenderedChat> r = render_jinja(t, messages, extra, add_generation_prompt);
    // A template that refuses this conversation (raise_exception) or fails
    // falls back to its family's renderer; limits are never retried.
    if (r.ok() || !t.has_family || native_tools || r.status().code() == StatusCode::kResourceExhausted) return r;
  }
  PromptBuilder out;
  switch (t.family) {
    case ChatFamily::ChatML: {
      if (messages[0].role != "system" && !t.default_system.empty()) {
        out.markup("<|im_start|>system\n" + t.default_system + "<|im_end|>\n");
      }
      for (const auto& m : messages) out.markup("<|im_start|>" + m.role + "\n").client(m.content).markup("<|im_end|>\n");
      if (add_generation_prompt) out.markup("<|im_start|>assistant\n");
      return out.take();
    }
    case ChatFamily::Llama3: {
      for (const auto& m : messages) {
        out.markup("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n").client(m.content).markup("<|eot_id|>");
      }
      if (add_generation_prompt) out.markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
      return out.take();
    }
    case ChatFamily::Phi3: {
      for (const auto& m : messages) out.markup("<|" + m.role + "|>\n").client(m.content).markup("<|end|>\n");
      if (add_generation_prompt) out.markup("<|assistant|>\n");
      return out.take();
    }
    case ChatFamily::Gemma:
    case ChatFamily::Llama2:
    case ChatFamily::Mistral: break;
  }
  // These families have no system role: it is folded into the first user turn.
  // Named copies: lambdas may not capture structured bindings before C++20's P1091 (clang 14).
  const auto split = split_system(messages);
  const std::string& sys = split.first;
  const std::vector<ChatMessage>& turns = split.second;
  if (turns.empty() || turns[0].role != "user") {
    return InvalidArgument(std::string(chat_family_name(t.family)) + " chats must start with a user message");
  }
  bool first = true;
  for (const auto& m : turns) {
    const bool user = m.role == "user";
    const bool with_sys = first && !sys.empty();
    first = false;
    auto content = [&] {
      if (with_sys && t.family == ChatFamily::Llama2) out.markup("<<SYS>>\n").client(sys).markup("\n<</SYS>>\n\n");
      else if (with_sys) out.client(sys).markup("\n\n");
      out.client(m.content);
    };
    if (t.family == ChatFamily::Gemma) {
      out.markup("<start_of_turn>" + std::string(user ? "user" : "model") + "\n");
      content();
      out.markup("<end_of_turn>\n");
    } else if (user) {
      out.markup("[INST] ");
      content();
      out.markup(" [/INST]");
    } else {
      out.markup(t.family == ChatFamily::Llama2 ? " " : "");
      content();
      out.markup("</s>");
    }
  }
  if (t.family == ChatFamily::Gemma && add_generation_prompt) out.markup("<start_of_turn>model\n");
  return out.take();
}

Expected<std::string> render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  STRIDE_ASSIGN_OR_RETURN(RenderedChat r, render_chat_marked(t, messages));
  return std::move(r.text);
}

}  // namespace stride::serving
