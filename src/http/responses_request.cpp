#include "http/responses_request.h"

#include <utility>

#include "http/openai_fields.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

ApiError unsupported(const std::string& param, const std::string& what) {
  return bad_field(param, what, "unsupported_parameter");
}

// One content part's text: input_text (user side) or output_text (earlier answers).
ApiError part_text(const json& part, std::string& text) {
  const json* type = part.is_object() ? Fields(part).find("type") : nullptr;
  const json* t = part.is_object() ? Fields(part).find("text") : nullptr;
  if (!type || !type->is_string()) return bad_field("input", "each content part needs a string 'type'");
  const std::string& ty = type->get_ref<const std::string&>();
  if (ty != "input_text" && ty != "output_text") {
    return unsupported("input", "content part type '" + ty + "' is not supported (only input_text and output_text)");
  }
  if (!t || !t->is_string()) return bad_field("input", "a '" + ty + "' part needs a string 'text'");
  text += t->get_ref<const std::string&>();
  return {};
}

// One input item as a chat message {"role", "content": STRING}.
ApiError input_message(const json& item, json& msg) {
  if (!item.is_object()) return bad_field("input", "each input item must be an object");
  Fields f(item);
  if (const json* type = f.find("type")) {
    if (!type->is_string()) return bad_field("input", "an input item's 'type' must be a string");
    if (*type != "message") {
      return unsupported("input", "input items of type '" + type->get<std::string>() +
                                      "' are not supported (only messages)");
    }
  }
  const json* role = f.find("role");
  if (!role || !role->is_string()) return bad_field("input", "each input message needs a string 'role'");
  std::string r = role->get<std::string>();
  if (r != "user" && r != "assistant" && r != "system" && r != "developer") {
    return bad_field("input", "an input message's role must be user, assistant, system or developer");
  }
  if (r == "developer") r = "system";  // chat templates know system prompts, not developer ones
  const json* c = f.find("content");
  std::string text;
  if (c && c->is_string()) {
    text = c->get<std::string>();
  } else if (c && c->is_array()) {
    for (const json& part : *c) STRIDE_API_TRY(part_text(part, text));
  } else {
    return bad_field("input", "an input message's 'content' must be a string or a list of text parts");
  }
  msg = {{"role", r}, {"content", std::move(text)}};
  return {};
}

ApiError read_input(const json& b, json& messages) {
  const json* in = Fields(b).find("input");
  if (!in) return bad_field("input", "'input' is required");
  if (in->is_string()) {
    messages.push_back({{"role", "user"}, {"content", in->get<std::string>()}});
    return {};
  }
  if (!in->is_array() || in->empty()) return bad_field("input", "'input' must be a string or a non-empty list of items");
  if (in->size() > kMaxInputItems) {
    return bad_field("input", "at most " + std::to_string(kMaxInputItems) + " input items are accepted");
  }
  for (const json& item : *in) {
    json msg;
    STRIDE_API_TRY(input_message(item, msg));
    messages.push_back(std::move(msg));
  }
  return {};
}

// text.format -> response_format.
ApiError read_text_format(const json& b, json& chat, ResponsesCall& out) {
  const json* text = Fields(b).find("text");
  if (!text) return {};
  if (!text->is_object()) return bad_field("text", "'text' must be an object");
  Fields tf(*text);
  // A hint about length for models trained on it; these models have no such control.
  if (const json* v = tf.find("verbosity"); v && !(*v == "low" || *v == "medium" || *v == "high")) {
    return bad_field("text.verbosity", "'text.verbosity' must be one of 'low', 'medium', 'high'");
  }
  const json* format = tf.find("format");
  if (!format) return {};
  if (!format->is_object()) return bad_field("text.format", "'text.format' must be an object");
  Fields ff(*format);
  const json* type = ff.find("type");
  if (!type || !type->is_string()) return bad_field("text.format", "'text.format.type' must be a string");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return {};
  if (t == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (t == "json_schema") {
    for (const char* key : {"name", "schema"}) {
      if (!ff.find(key)) return bad_field("text.format", std::string("'text.format.") + key + "' is required");
    }
    json schema_spec = json::object();
    for (const char* key : {"name", "schema", "strict"}) {
      if (const json* v = ff.find(key)) schema_spec[key] = *v;
    }
    std::string description;
    if (ApiError e = ff.opt_string("description", 64 * 1024, description); !e.ok()) {
      return bad_field("text.format", "'text.format.description' must be a string");
    }
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema_spec)}};
  } else {
    return bad_field("text.format", "'text.format.type' must be 'text', 'json_object' or 'json_schema'");
  }
  out.text_format = *format;
  return {};
}

// Fields of the Responses API this server does not implement: refused, not ignored.
ApiError refuse_unsupported(const Fields& f) {
  if (const json* v = f.find("tools"); v && !(v->is_array() && v->empty())) {
    return unsupported("tools", "'tools' is not supported on /v1/responses (use /v1/chat/completions)");
  }
  if (const json* v = f.find("tool_choice"); v && !(v->is_string() && (*v == "none" || *v == "auto"))) {
    return unsupported("tool_choice", "'tool_choice' can only be 'none' or 'auto' without tools");
  }
  for (const char* key : {"previous_response_id", "conversation"}) {
    if (f.find(key)) return unsupported(key, std::string("'") + key + "' needs stored responses, which this server does not keep");
  }
  if (f.find("prompt")) return unsupported("prompt", "'prompt' (a stored prompt template) is not supported; send 'input'");
  if (f.find("context_management")) return unsupported("context_management", "'context_management' is not supported");
  bool background = false;
  STRIDE_API_TRY(f.opt_bool("background", background));
  if (background) return unsupported("background", "background responses are not supported");
  if (const json* v = f.find("truncation"); v && *v != "disabled") {
    return unsupported("truncation", "only 'truncation': 'disabled' is supported");
  }
  int64_t max_tool_calls = 0;
  STRIDE_API_TRY(f.opt_int("max_tool_calls", 0, 1 << 20, max_tool_calls));
  if (const json* v = f.find("stream_options"); v && !v->is_object()) return f.type_error("stream_options", "an object");
  return {};
}

// include: of OpenAI's extra outputs only "message.output_text.logprobs",
// which turns on the chat request's logprobs (top_logprobs alternatives per
// token, 0 to 20). Without it top_logprobs asks for nothing, as in vLLM.
ApiError read_include(const Fields& f, json& chat) {
  constexpr const char* kLogprobs = "message.output_text.logprobs";
  const json* include = f.find("include");
  if (include && !include->is_array()) return f.type_error("include", "a list of strings");
  bool logprobs = false;
  for (const json& item : include ? *include : json::array()) {
    if (!item.is_string()) return f.type_error("include", "a list of strings");
    if (item != kLogprobs) {
      return unsupported("include", "'include' value '" + item.get<std::string>() + "' is not supported (only " +
                                        kLogprobs + ")");
    }
    logprobs = true;
  }
  int top_logprobs = 0;
  STRIDE_API_TRY(f.opt_int("top_logprobs", 0, 20, top_logprobs));
  if (logprobs) {
    chat["logprobs"] = true;
    chat["top_logprobs"] = top_logprobs;
  }
  return {};
}

ApiError read_metadata(const json& b, ResponsesCall& out) {
  STRIDE_API_TRY(check_metadata(b));
  if (const json* md = Fields(b).find("metadata")) out.metadata = *md;
  return {};
}

// reasoning: {effort, summary}; effort is the chat request's reasoning_effort
// (templates that read it); a summary is not written.
ApiError read_reasoning(const Fields& f, json& chat) {
  const json* r = f.find("reasoning");
  if (!r) return {};
  if (!r->is_object()) return f.type_error("reasoning", "an object");
  if (const json* effort = Fields(*r).find("effort")) chat["reasoning_effort"] = *effort;
  for (const char* key : {"summary", "generate_summary"}) {
    if (Fields(*r).find(key)) return unsupported("reasoning", std::string("'reasoning.") + key + "' is not supported");
  }
  return {};
}

// The translated chat request's field names, as the client wrote them.
ApiError rename_params(ApiError e) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"messages", "input"}, {"max_completion_tokens", "max_output_tokens"}, {"response_format", "text.format"},
      {"reasoning_effort", "reasoning.effort"}};
  for (const auto& [chat_name, responses_name] : kNames) {
    if (e.param == chat_name) e.param = responses_name;
    for (size_t at; (at = e.message.find(chat_name)) != std::string::npos;) {
      e.message.replace(at, std::string(chat_name).size(), responses_name);
    }
  }
  return e;
}

}  // namespace

ApiError parse_responses(const json& b, const ParseContext& ctx, ResponsesCall& out) {
  if (!b.is_object()) return bad_field("", "the request body must be a JSON object");
  Fields f(b);
  STRIDE_API_TRY(check_unknown_fields(b, Endpoint::Responses, ctx.cfg->strict_requests));
  STRIDE_API_TRY(check_model_and_nulls(b, Endpoint::Responses, ctx.cfg->strict_requests));
  STRIDE_API_TRY(check_ignored_fields(b, Endpoint::Responses));
  STRIDE_API_TRY(refuse_unsupported(f));
  STRIDE_API_TRY(read_metadata(b, out));
  // OpenAI's minimum: room for reasoning and an answer.
  int64_t max_output = kMinMaxOutputTokens;
  STRIDE_API_TRY(f.opt_int("max_output_tokens", kMinMaxOutputTokens, INT32_MAX, max_output));
  json chat = json::object();
  STRIDE_API_TRY(read_reasoning(f, chat));
  STRIDE_API_TRY(read_include(f, chat));
  json messages = json::array();
  if (const json* v = f.find("instructions")) {
    if (!v->is_string()) return f.type_error("instructions", "a string");
    messages.push_back({{"role", "system"}, {"content", *v}});
    out.instructions = *v;
  }
  STRIDE_API_TRY(read_input(b, messages));
  chat["messages"] = std::move(messages);
  // Copied unchanged: parse_generation checks them under the same names.
  for (const char* key : {"model", "temperature", "top_p", "stream", "user", "seed"}) {
    if (const json* v = f.find(key)) chat[key] = *v;
  }
  if (const json* v = f.find("max_output_tokens")) chat["max_completion_tokens"] = *v;
  STRIDE_API_TRY(read_text_format(b, chat, out));

  // The schema's property order comes from the client's own text.
  std::string order_body;
  if (const json* rf = Fields(chat).find("response_format"); rf && rf->contains("json_schema")) {
    const auto doc = nlohmann::ordered_json::parse(ctx.body, nullptr, false);
    const nlohmann::ordered_json* node = &doc;
    for (const char* key : {"text", "format", "schema"}) {
      if (!node->is_object() || !node->contains(key)) {
        node = nullptr;
        break;
      }
      node = &(*node)[key];
    }
    if (node) {
      nlohmann::ordered_json wrapped;
      wrapped["response_format"]["json_schema"]["schema"] = *node;
      order_body = wrapped.dump();
    }
  }
  ParseContext chat_ctx = ctx;
  chat_ctx.body = order_body;
  STRIDE_API_TRY(rename_params(parse_generation(chat, /*chat=*/true, chat_ctx, out.gen)));
  for (auto [key, target] : {std::pair{"max_output_tokens", &out.max_output_tokens}, {"temperature", &out.temperature},
                             {"top_p", &out.top_p}, {"user", &out.user}}) {
    if (const json* v = f.find(key)) *target = *v;
  }
  return {};
}

}  // namespace stride::server
