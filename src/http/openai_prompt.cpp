#include "http/openai_prompt.h"

#include "http/openai_tools.h"
#include "jinja/template.h"
#include "serving/generation_checks.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

// An assistant turn's earlier reasoning (`reasoning_content`, or `thinking`
// as gpt-oss's template names it): templates that render it get it.
ApiError read_reasoning(const json& m, serving::ClientMessage& cm) {
  for (const char* key : {"reasoning_content", "thinking"}) {
    const json* r = Fields(m).find(key);
    if (!r || r->is_null()) continue;
    if (!r->is_string()) return bad_field("messages", std::string("message '") + key + "' must be a string");
    if (cm.role != "assistant") return bad_field("messages", std::string("only assistant messages carry '") + key + "'");
    cm.thinking = r->get<std::string>();
  }
  return {};
}

// OpenAI's message roles ("function": the deprecated function result).
bool known_role(const std::string& r) {
  for (const char* k : {"system", "developer", "user", "assistant", "tool", "function"}) {
    if (r == k) return true;
  }
  return false;
}

// content: a string or a non-empty list of text parts; required (non-null)
// but for an assistant turn (which may carry only calls) and a function result.
ApiError read_content(const json& m, const std::string& path, serving::ClientMessage& cm) {
  const json* c = Fields(m).find("content");
  const std::string cpath = path + ".content";
  if (!c) {
    if (cm.role == "assistant" || cm.role == "function") return {};
    return bad_field(cpath, "'" + cpath + "' is required for a '" + cm.role + "' message (a string or a list of parts)");
  }
  if (c->is_string()) {
    cm.content = c->get<std::string>();
  } else if (c->is_array()) {  // [{"type":"text","text":...}]
    if (c->empty()) return bad_field(cpath, "'" + cpath + "' must not be an empty list");
    for (const auto& part : *c) {
      const json* type = part.is_object() ? Fields(part).find("type") : nullptr;
      const json* text = part.is_object() ? Fields(part).find("text") : nullptr;
      if (!type || *type != "text" || !text || !text->is_string()) {
        return bad_field("messages", "only text content parts ({\"type\": \"text\", \"text\": STRING}) are supported");
      }
      cm.content += text->get_ref<const std::string&>();
    }
  } else {
    return bad_field("messages", "message 'content' must be a string or a list of text parts");
  }
  return {};
}

ApiError read_message(const json& m, size_t index, serving::ClientMessage& cm) {
  if (!m.is_object()) return bad_field("messages", "each message must be an object");
  const std::string path = "messages[" + std::to_string(index) + "]";
  Fields f(m);
  const json* role = f.find("role");
  if (!role || !role->is_string()) return bad_field("messages", "each message needs a string 'role'");
  cm.role = role->get<std::string>();
  if (!known_role(cm.role)) {
    return bad_field(path + ".role", "'" + path + ".role' must be 'system', 'developer', 'user', 'assistant' or 'tool'");
  }
  if (const json* name = f.find("name"); name && !name->is_string()) {
    return bad_field(path + ".name", "'" + path + ".name' must be a string");
  }
  STRIDE_API_TRY(read_content(m, path, cm));
  return read_reasoning(m, cm);
}

// Extra variables for the model's own template (enable_thinking, ...): client
// text; and OpenAI's reasoning_effort (minimal | low | medium | high), the
// template variable of the same name (gpt-oss).
ApiError read_template_variables(const json& b, serving::GenerationRequest& g) {
  if (const json* kw = Fields(b).find("chat_template_kwargs"); kw && !kw->is_null()) {
    if (!kw->is_object()) return bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    g.template_kwargs = jinja::context_from_json(*kw);
  }
  if (const json* effort = Fields(b).find("reasoning_effort"); effort && !effort->is_null()) {
    bool known = false;
    for (const char* e : {"none", "minimal", "low", "medium", "high", "xhigh"}) known = known || *effort == e;
    if (!effort->is_string() || !known) {
      return bad_field("reasoning_effort",
                       "'reasoning_effort' must be \"none\", \"minimal\", \"low\", \"medium\", \"high\" or \"xhigh\"");
    }
    g.reasoning_effort = effort->get<std::string>();
  }
  // vLLM's extension: false ends the prompt with the last message (no assistant opener).
  return Fields(b).opt_bool("add_generation_prompt", g.add_generation_prompt);
}

}  // namespace

namespace {

ApiError read_token_list(const json& p, const ParseContext& ctx, std::vector<int32_t>& out) {
  if (!p.is_array() || p.empty()) return api_error(serving::prompt_shape_error());
  if ((int64_t)p.size() > ctx.cfg->max_context_length) return api_error(serving::prompt_tokens_over_context());
  out.reserve(p.size());
  for (const auto& t : p) {
    if (!is_json_integer(t)) return bad_field("prompt", "token prompts must be lists of integers");
    const std::optional<int64_t> id = json_int64(t);
    if (!id || *id < 0 || *id >= ctx.n_vocab) return api_error(serving::token_id_error(ctx.n_vocab));
    out.push_back((int32_t)*id);
  }
  return {};
}

}  // namespace

ApiError read_prompt(const json& b, const ParseContext& ctx, serving::GenerationRequest& g) {
  Fields f(b);
  const json* found = f.find("prompt");
  if (!found) return bad_field("prompt", "'prompt' is required");
  STRIDE_API_TRY(f.opt_bool("parse_special", g.parse_special));
  // A batch: a list of strings or a list of token lists, each prompt its own choices.
  const json& p = *found;
  if (p.is_array() && p.size() > 1 && (p[0].is_string() || p[0].is_array())) {
    const bool texts = p[0].is_string();
    for (const auto& one : p) {
      if (texts ? !one.is_string() : !one.is_array()) {
        return bad_field("prompt", "a batch of prompts must be all strings or all lists of token ids");
      }
    }
    for (size_t i = 1; i < p.size(); ++i) {
      if (texts) {
        g.more_texts.push_back(p[i].get<std::string>());
      } else {
        STRIDE_API_TRY(read_token_list(p[i], ctx, g.more_tokens.emplace_back()));
      }
    }
    return read_prompt_value(p[0], ctx, g);
  }
  return read_prompt_value(p, ctx, g);
}

ApiError read_prompt_value(const json& value, const ParseContext& ctx, serving::GenerationRequest& g) {
  const json* p = &value;
  // A batch of one prompt is its prompt.
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    g.prompt = serving::GenerationRequest::Prompt::Text;
    g.text = p->get<std::string>();
    return {};
  }
  g.prompt = serving::GenerationRequest::Prompt::Tokens;
  return read_token_list(*p, ctx, g.tokens);
}

ApiError read_messages(const json& b, serving::GenerationRequest& g) {
  STRIDE_API_TRY(read_message_list(Fields(b).find("messages"), g));
  return read_template_variables(b, g);
}

ApiError read_message_list(const json* ms, serving::GenerationRequest& g) {
  if (!ms || !ms->is_array() || ms->empty()) return bad_field("messages", "'messages' must be a non-empty list");
  if (ms->size() > kMaxMessages) {
    return bad_field("messages", "at most " + std::to_string(kMaxMessages) + " messages are accepted");
  }
  g.prompt = serving::GenerationRequest::Prompt::Chat;
  g.messages.resize(ms->size());
  std::string legacy_call;  // the id of the last deprecated function_call
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    serving::ClientMessage& cm = g.messages[i];
    STRIDE_API_TRY(read_message(m, i, cm));
    const bool function_result = cm.role == "function";
    STRIDE_API_TRY(read_tool_parts(m, i, cm));
    if (Fields(m).find("function_call") && !cm.tool_calls.empty()) legacy_call = cm.tool_calls.back().id;
    if (function_result) cm.tool_call_id = legacy_call;
  }
  return {};
}

}  // namespace stride::server
