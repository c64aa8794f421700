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

ApiError read_message(const json& m, serving::ClientMessage& cm) {
  if (!m.is_object()) return bad_field("messages", "each message must be an object");
  Fields f(m);
  const json* role = f.find("role");
  if (!role || !role->is_string()) return bad_field("messages", "each message needs a string 'role'");
  cm.role = role->get<std::string>();
  const json* c = f.find("content");
  if (!c) return read_reasoning(m, cm);
  if (c->is_string()) {
    cm.content = c->get<std::string>();
  } else if (c->is_array()) {  // [{"type":"text","text":...}]
    for (const auto& part : *c) {
      const json* type = part.is_object() ? Fields(part).find("type") : nullptr;
      const json* text = part.is_object() ? Fields(part).find("text") : nullptr;
      if (!type || *type != "text" || !text || !text->is_string()) {
        return bad_field("messages", "only text content parts ({\"type\": \"text\", \"text\": STRING}) are supported");
      }
      cm.content += text->get_ref<const std::string&>();
    }
  } else if (!c->is_null()) {
    return bad_field("messages", "message 'content' must be a string or a list of text parts");
  }
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
    if (!effort->is_string() || (*effort != "low" && *effort != "medium" && *effort != "high" && *effort != "minimal")) {
      return bad_field("reasoning_effort", "'reasoning_effort' must be \"minimal\", \"low\", \"medium\" or \"high\"");
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
    if (!t.is_number_integer()) return bad_field("prompt", "token prompts must be lists of integers");
    const bool too_big = t.is_number_unsigned() && t.get<uint64_t>() >= (uint64_t)ctx.n_vocab;
    const int64_t id = too_big ? -1 : t.get<int64_t>();
    if (too_big || id < 0 || id >= ctx.n_vocab) return api_error(serving::token_id_error(ctx.n_vocab));
    out.push_back((int32_t)id);
  }
  return {};
}

}  // namespace

ApiError read_prompt(const json& b, const ParseContext& ctx, serving::GenerationRequest& g) {
  Fields f(b);
  const json* found = f.find("prompt");
  if (!found) return bad_field("prompt", "'prompt' is required");
  const json* p = found;
  STRIDE_API_TRY(f.opt_bool("parse_special", g.parse_special));
  // A batch: a list of strings or a list of token lists, each prompt its own choices.
  if (p->is_array() && !p->empty() && ((*p)[0].is_string() || (*p)[0].is_array())) {
    const bool texts = (*p)[0].is_string();
    for (const auto& one : *p) {
      if (texts ? !one.is_string() : !one.is_array()) {
        return bad_field("prompt", "a batch of prompts must be all strings or all lists of token ids");
      }
    }
    for (size_t i = 1; i < p->size(); ++i) {
      if (texts) {
        g.more_texts.push_back((*p)[i].get<std::string>());
      } else {
        STRIDE_API_TRY(read_token_list((*p)[i], ctx, g.more_tokens.emplace_back()));
      }
    }
    p = &(*p)[0];
  }
  if (p->is_string()) {
    g.prompt = serving::GenerationRequest::Prompt::Text;
    g.text = p->get<std::string>();
    return {};
  }
  g.prompt = serving::GenerationRequest::Prompt::Tokens;
  return read_token_list(*p, ctx, g.tokens);
}

ApiError read_messages(const json& b, serving::GenerationRequest& g) {
  const json* ms = Fields(b).find("messages");
  if (!ms || !ms->is_array() || ms->empty()) return bad_field("messages", "'messages' must be a non-empty list");
  if (ms->size() > kMaxMessages) {
    return bad_field("messages", "at most " + std::to_string(kMaxMessages) + " messages are accepted");
  }
  g.prompt = serving::GenerationRequest::Prompt::Chat;
  g.messages.resize(ms->size());
  for (size_t i = 0; i < ms->size(); ++i) {
    STRIDE_API_TRY(read_message((*ms)[i], g.messages[i]));
    STRIDE_API_TRY(read_tool_parts((*ms)[i], i, g.messages[i]));
  }
  return read_template_variables(b, g);
}

}  // namespace stride::server
