#include "http/openai_request.h"

#include <algorithm>
#include <map>
#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_states.h"
#include "grammar/json_schema.h"
#include "jinja/template.h"
#include "serving/tool_format_harmony.h"
#include "serving/tool_format_hermes.h"
#include "serving/tool_format_llama3.h"
#include "serving/tool_format_mistral.h"
#include "serving/tool_template_values.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

#define TRY(expr)            \
  do {                       \
    ApiError _e = (expr);    \
    if (!_e.ok()) return _e; \
  } while (0)

// The sampling knobs: one row per field, so every one is checked the same way.
struct FloatField {
  const char* key;
  double lo, hi;
  bool lo_open;
  float SamplingParams::*target;
};
constexpr FloatField kSamplingFloats[] = {
    {"temperature", 0.0, 2.0, false, &SamplingParams::temperature},
    {"top_p", 0.0, 1.0, true, &SamplingParams::top_p},
    {"min_p", 0.0, 1.0, false, &SamplingParams::min_p},
    {"presence_penalty", -2.0, 2.0, false, &SamplingParams::presence_penalty},
    {"frequency_penalty", -2.0, 2.0, false, &SamplingParams::frequency_penalty},
    {"repetition_penalty", 0.01, 10.0, false, &SamplingParams::repeat_penalty},
};

// Fields clients send that this server does not implement: refused with a
// clear error rather than silently ignored (absent, null, or the listed
// harmless value are fine).
ApiError refuse_unsupported(const json& b, bool chat) {
  Fields f(b);
  if (const json* v = f.find("logit_bias"); v && !(v->is_object() && v->empty())) {
    return bad_field("logit_bias", "'logit_bias' is not supported");
  }
  if (const json* v = f.find("tools"); !chat && v && !(v->is_array() && v->empty())) {
    return bad_field("tools", "'tools' is only accepted by /v1/chat/completions");
  }
  std::string ignored;
  TRY(f.opt_string("user", 256, ignored));
  return {};
}

ApiError read_prompt(const json& b, const ParseContext& ctx, GenerationCall& out) {
  Fields f(b);
  const json* found = f.find("prompt");
  if (!found) return bad_field("prompt", "'prompt' is required");
  const json* p = found;
  // A batch of one prompt is accepted; several prompts are not (n=1 serving).
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  bool parse_special = false;
  TRY(f.opt_bool("parse_special", parse_special));
  const bool add_bos = ctx.tok->add_bos_default();
  if (p->is_string()) {
    out.prompt_text = p->get<std::string>();
    out.req.prompt = ctx.tok->encode(out.prompt_text, add_bos, parse_special);
    return {};
  }
  if (!p->is_array() || p->empty()) {
    return bad_field("prompt", "'prompt' must be a string, a list of token ids, or a list of one of those");
  }
  if ((int64_t)p->size() > ctx.cfg->max_context_length) {
    return {413, "the prompt has more tokens than the context length", "prompt", "prompt_too_long"};
  }
  out.req.prompt.reserve(p->size());
  for (const auto& t : *p) {
    if (!t.is_number_integer()) return bad_field("prompt", "token prompts must be lists of integers");
    const bool too_big = t.is_number_unsigned() && t.get<uint64_t>() >= (uint64_t)ctx.n_vocab;
    const int64_t id = too_big ? -1 : t.get<int64_t>();
    if (too_big || id < 0 || id >= ctx.n_vocab) {
      return bad_field("prompt", "token ids must be integers in [0, " + std::to_string(ctx.n_vocab) + ")");
    }
    out.req.prompt.push_back((int32_t)id);
  }
  return {};
}

// An assistant turn's earlier reasoning (`reasoning_content`, or `thinking`
// as gpt-oss's template names it): templates that render it get it.
ApiError read_reasoning(const json& m, serving::ChatMessage& cm) {
  for (const char* key : {"reasoning_content", "thinking"}) {
    const json* r = Fields(m).find(key);
    if (!r || r->is_null()) continue;
    if (!r->is_string()) return bad_field("messages", std::string("message '") + key + "' must be a string");
    if (cm.role != "assistant") return bad_field("messages", std::string("only assistant messages carry '") + key + "'");
    cm.thinking = r->get<std::string>();
  }
  return {};
}

ApiError read_message(const json& m, serving::ChatMessage& cm) {
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

ApiError read_messages(const json& b, const ParseContext& ctx, GenerationCall& out) {
  const json* ms = Fields(b).find("messages");
  if (!ms || !ms->is_array() || ms->empty()) return bad_field("messages", "'messages' must be a non-empty list");
  if (ms->size() > kMaxMessages) {
    return bad_field("messages", "at most " + std::to_string(kMaxMessages) + " messages are accepted");
  }
  std::vector<serving::ChatMessage> msgs(ms->size());
  ToolCallNames call_names;
  // A template with a tool syntax of its own renders tools, calls and results itself.
  if (ctx.chat->ok() && ctx.chat->value().jinja) out.tools.format = ctx.chat->value().tool_format;
  const bool native = out.tools.format != serving::ToolFormat::Generic;
  // Formats written with control tokens: the reply keeps them as text for its reader.
  out.req.render_special = out.tools.format == serving::ToolFormat::Harmony ||
                           (out.tools.active() && !serving::tool_format_control_texts(out.tools.format).empty());
  for (size_t i = 0; i < ms->size(); ++i) {
    TRY(read_message((*ms)[i], msgs[i]));
    TRY(read_tool_message((*ms)[i], i, msgs[i], call_names, out.tools.format));
  }
  if (!native) add_tools_system_text(msgs, out.tools);
  if (!ctx.chat->ok()) return bad_field("messages", ctx.chat->status().message(), "chat_template_unavailable");
  // Extra variables for the model's own template (enable_thinking, ...): client text.
  jinja::Value kwargs;
  if (const json* kw = Fields(b).find("chat_template_kwargs"); kw && !kw->is_null()) {
    if (!kw->is_object()) return bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    kwargs = jinja::context_from_json(*kw);
  }
  // OpenAI's reasoning_effort (minimal | low | medium | high): the template variable
  // of the same name (gpt-oss), unless chat_template_kwargs set it.
  if (const json* effort = Fields(b).find("reasoning_effort"); effort && !effort->is_null()) {
    if (!effort->is_string() || (*effort != "low" && *effort != "medium" && *effort != "high" && *effort != "minimal")) {
      return bad_field("reasoning_effort", "'reasoning_effort' must be \"minimal\", \"low\", \"medium\" or \"high\"");
    }
    jinja::DictData vars = kwargs.is_dict() ? kwargs.as_dict() : jinja::DictData{};
    if (!vars.find("reasoning_effort")) {
      vars.set("reasoning_effort", jinja::Value(jinja::Str(effort->get<std::string>(), true)));
    }
    kwargs = jinja::Value::dict(std::move(vars));
  }
  // tool_choice 'none' offers no tools: the template does not see them.
  if (native && out.tools.active()) {
    jinja::DictData vars = kwargs.is_dict() ? kwargs.as_dict() : jinja::DictData{};
    vars.set("tools", serving::tools_template_value(out.tools.raw_tools));
    kwargs = jinja::Value::dict(std::move(vars));
  }
  // vLLM's extension: false ends the prompt with the last message (no assistant opener).
  bool add_generation_prompt = true;
  TRY(Fields(b).opt_bool("add_generation_prompt", add_generation_prompt));
  auto rendered = serving::render_chat_marked(ctx.chat->value(), msgs, kwargs, add_generation_prompt);
  if (!rendered.ok()) return bad_field("messages", rendered.status().message());
  out.prompt_text = rendered->text;
  out.req.prompt = ctx.tok->encode_with_literals(rendered->text, rendered->literal, ctx.tok->add_bos_default());
  return {};
}

ApiError read_stop(const json& b, GenerationCall& out) {
  const json* s = Fields(b).find("stop");
  if (!s) return {};
  auto add = [&](const json& x) -> ApiError {
    if (!x.is_string()) return bad_field("stop", "'stop' entries must be strings");
    if (x.get_ref<const std::string&>().size() > kMaxStopBytes) {
      return bad_field("stop", "each stop string must be at most " + std::to_string(kMaxStopBytes) + " bytes");
    }
    if (!x.get_ref<const std::string&>().empty()) out.req.stop.push_back(x.get<std::string>());
    return {};
  };
  if (s->is_string()) return add(*s);
  if (!s->is_array() || s->size() > kMaxStopStrings) {
    return bad_field("stop", "'stop' must be a string or a list of at most " + std::to_string(kMaxStopStrings) + " strings");
  }
  for (const auto& x : *s) TRY(add(x));
  return {};
}

ApiError read_logprobs(const json& b, bool chat, GenerationCall& out) {
  Fields f(b);
  if (chat) {
    bool on = false;
    TRY(f.opt_bool("logprobs", on));
    int top = 0;
    TRY(f.opt_int("top_logprobs", 0, 20, top));
    if (on) out.req.top_logprobs = top;
  } else if (f.find("logprobs")) {
    int top = 0;
    TRY(f.opt_int("logprobs", 0, 20, top));
    out.req.top_logprobs = top;
  }
  out.logprobs = out.req.top_logprobs >= 0;
  return {};
}

ApiError read_sampling(const json& b, SamplingParams& s) {
  Fields f(b);
  s.temperature = 1.0f;  // OpenAI's defaults
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  for (const FloatField& ff : kSamplingFloats) TRY(f.opt_number(ff.key, ff.lo, ff.hi, s.*ff.target, ff.lo_open));
  TRY(f.opt_int("top_k", -1, 1 << 20, s.top_k));
  if (const json* seed = f.find("seed")) {
    // OpenAI documents a signed 64-bit seed; unsigned 64-bit values are accepted too.
    if (!seed->is_number_integer()) return f.type_error("seed", "an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : (uint64_t)seed->get<int64_t>();
  } else {
    s.seed = std::random_device{}();
  }
  return {};
}

// response_format ({"type": "text" | "json_object" | "json_schema"}) and the
// `grammar` extension (GBNF text) become one compiled grammar on the request.
// Where the client wrote response_format.json_schema.schema's properties in
// some order, that order (the parsed body keeps keys sorted).
std::map<std::string, std::vector<std::string>> schema_property_order(std::string_view body) {
  const auto doc = nlohmann::ordered_json::parse(body, nullptr, false);
  const nlohmann::ordered_json* node = &doc;
  for (const char* key : {"response_format", "json_schema", "schema"}) {
    if (!node->is_object()) return {};
    auto it = node->find(key);
    if (it == node->end()) return {};
    node = &*it;
  }
  return grammar::property_order_of(*node);
}

ApiError set_grammar(const std::string& gbnf, const grammar::GrammarLimits& limits, const char* param,
                     GenerationCall& out) {
  auto compiled = grammar::compile_gbnf(gbnf, limits);
  if (!compiled.ok()) return bad_field(param, compiled.status().message(), "invalid_grammar");
  // The start state is built here, on the request's thread: a grammar whose
  // first step alone passes the per-token work limit never reaches the engine.
  if (grammar::GrammarStates(*compiled, grammar::GrammarMatcher::kMaxWorkPerToken).exhausted()) {
    return bad_field(param, "the grammar is too ambiguous to follow (too much parse work for one token)",
                     "invalid_grammar");
  }
  out.req.grammar = std::move(*compiled);
  return {};
}

ApiError read_structured_output(const json& b, const ParseContext& ctx, GenerationCall& out) {
  Fields f(b);
  const json* rf = f.find("response_format");
  const json* gr = f.find("grammar");
  std::string gbnf;
  const char* param = "grammar";
  grammar::GrammarLimits limits;
  if (rf) {
    param = "response_format";
    if (!rf->is_object()) return bad_field(param, "'response_format' must be an object");
    const json* type = Fields(*rf).find("type");
    if (!type || !type->is_string()) return bad_field(param, "'response_format.type' must be a string");
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "json_object") {
      gbnf = grammar::json_object_gbnf();
    } else if (t == "json_schema") {
      const json* js = Fields(*rf).find("json_schema");
      if (!js || !js->is_object()) return bad_field(param, "'response_format.json_schema' must be an object");
      Fields jf(*js);
      std::string name;
      ApiError e = jf.opt_string("name", 256, name);
      if (!e.ok()) return bad_field(param, "'response_format.json_schema.name' must be a string of at most 256 bytes");
      grammar::SchemaOptions opts;
      e = jf.opt_bool("strict", opts.strict);
      if (!e.ok()) return bad_field(param, "'response_format.json_schema.strict' must be a boolean");
      const json* schema = jf.find("schema");
      if (!schema) {
        gbnf = grammar::json_object_gbnf();
      } else {
        opts.property_order = schema_property_order(ctx.body);
        auto converted = grammar::json_schema_to_gbnf(*schema, opts);
        if (!converted.ok()) return bad_field(param, converted.status().message(), "invalid_schema");
        gbnf = std::move(*converted);
        limits.max_text_bytes = 8u << 20;  // generated from a body the server already size-checked
      }
    } else if (t != "text") {
      return bad_field(param, "'response_format.type' must be 'text', 'json_object' or 'json_schema'");
    }
  }
  if (gr) {
    if (!gbnf.empty()) return bad_field("grammar", "give either 'grammar' or a JSON 'response_format', not both");
    if (!gr->is_string()) return f.type_error("grammar", "a string");
    param = "grammar";
    gbnf = gr->get<std::string>();
    if (gbnf.empty()) return bad_field("grammar", "'grammar' must not be empty");
  }
  if (gbnf.empty()) return {};
  return set_grammar(gbnf, limits, param, out);
}

// tool_choice auto, required or a function: decoding follows the calls' grammar.
ApiError read_tool_grammar(GenerationCall& out) {
  if (!out.tools.active()) return {};
  if (out.req.grammar) {
    return bad_field("tools",
                     "'response_format' and 'grammar' cannot be combined with tools unless tool_choice is 'none'");
  }
  const serving::ToolFormat format = out.tools.format;
  // Replies in the formats whose calls follow a marker are, under `auto`,
  // free text that may hold calls (as vLLM and llama-server read them):
  // only a choice that must call is constrained.
  const bool marked = format == serving::ToolFormat::Hermes || format == serving::ToolFormat::MistralJson ||
                      format == serving::ToolFormat::MistralArgs || format == serving::ToolFormat::Harmony;
  if (marked && out.tools.choice.mode == serving::ToolChoiceMode::Auto) return {};
  auto gbnf = [&]() -> Expected<std::string> {
    switch (format) {
      case serving::ToolFormat::Hermes: return serving::hermes_call_gbnf(out.tools.tools, out.tools.choice);
      case serving::ToolFormat::Llama3: return serving::llama3_call_gbnf(out.tools.tools, out.tools.choice);
      case serving::ToolFormat::MistralJson:
      case serving::ToolFormat::MistralArgs:
        return serving::mistral_call_gbnf(out.tools.tools, out.tools.choice,
                                          format == serving::ToolFormat::MistralArgs);
      case serving::ToolFormat::Harmony: return serving::harmony_call_gbnf(out.tools.tools, out.tools.choice);
      case serving::ToolFormat::Generic: break;
    }
    return serving::tool_call_gbnf(out.tools.tools, out.tools.choice);
  }();
  if (!gbnf.ok()) return bad_field("tools", gbnf.status().message(), "invalid_schema");
  grammar::GrammarLimits limits;
  limits.max_text_bytes = 8u << 20;  // generated from a body the server already size-checked
  return set_grammar(*gbnf, limits, "tools", out);
}

ApiError read_attention(const json& b, const ParseContext& ctx) {
  std::string spec;
  TRY(Fields(b).opt_string("attention", 1024, spec));
  if (!Fields(b).find("attention")) return {};
  if (!ctx.cfg->allow_request_attention) {
    return bad_field("attention", "per-request attention policies are disabled (allow_request_attention: false)");
  }
  auto p = parse_policy(spec);
  if (!p.ok()) return bad_field("attention", p.status().message());
  // The KV cache holds one policy per layer for all sequences.
  if (!(*p == ctx.attention)) {
    return bad_field("attention", "this server runs attention '" + policy_to_string(ctx.attention) +
                                      "'; a different per-request policy needs its own engine");
  }
  return {};
}

}  // namespace

ApiError check_model_name(const std::string& model, const std::vector<std::string>& served) {
  if (model.empty() || std::find(served.begin(), served.end(), model) != served.end()) return {};
  std::string list;
  for (const std::string& s : served) list += (list.empty() ? "'" : ", '") + s + "'";
  return {404, "the model '" + model + "' does not exist; this server serves " + list, "model", "model_not_found"};
}

ApiError parse_generation(const json& b, bool chat, const ParseContext& ctx, GenerationCall& out) {
  if (!b.is_object()) return bad_field("", "the request body must be a JSON object");
  const serving::ServeConfig& cfg = *ctx.cfg;
  Fields f(b);
  out.chat = chat;
  std::string model;
  TRY(f.opt_string("model", 1024, model));
  TRY(check_model_name(model, ctx.model_names));
  int n = 1;
  TRY(f.opt_int("n", 1, 128, n));
  if (n != 1) return bad_field("n", "only n=1 is supported");
  int best_of = 1;
  TRY(f.opt_int("best_of", 1, 128, best_of));
  if (best_of != 1) return bad_field("best_of", "best_of is not supported");
  bool echo = false;
  TRY(f.opt_bool("echo", echo));
  if (echo) return bad_field("echo", "echo is not supported");
  TRY(refuse_unsupported(b, chat));
  if (chat) TRY(read_tools(b, ctx.body, out.tools));

  TRY(chat ? read_messages(b, ctx, out) : read_prompt(b, ctx, out));
  if (out.req.prompt.empty()) return bad_field(chat ? "messages" : "prompt", "the prompt is empty");
  if ((int64_t)out.req.prompt.size() > cfg.max_prompt_tokens) {
    return {413,
            "the prompt has " + std::to_string(out.req.prompt.size()) + " tokens; the limit is " +
                std::to_string(cfg.max_prompt_tokens),
            chat ? "messages" : "prompt", "prompt_too_long"};
  }

  const int64_t room = cfg.max_context_length - (int64_t)out.req.prompt.size();
  int64_t max_tokens = chat ? std::min<int64_t>(cfg.max_tokens_cap, room) : 16;
  // Chat takes either name (max_tokens is OpenAI's older one); both are checked.
  const char* mt_key = chat && f.find("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (chat && f.find("max_completion_tokens")) {
    int64_t older = max_tokens;
    TRY(f.opt_int("max_tokens", 1, INT32_MAX, older));
    if (older > cfg.max_tokens_cap) {
      return bad_field("max_tokens", "'max_tokens' exceeds the server cap of " + std::to_string(cfg.max_tokens_cap));
    }
  }
  TRY(f.opt_int(mt_key, 1, INT32_MAX, max_tokens));
  if (max_tokens > cfg.max_tokens_cap) {
    return bad_field(mt_key, std::string("'") + mt_key + "' exceeds the server cap of " + std::to_string(cfg.max_tokens_cap));
  }
  if (max_tokens > room) {
    return bad_field(mt_key,
                     "prompt (" + std::to_string(out.req.prompt.size()) + " tokens) + " + mt_key + " (" +
                         std::to_string(max_tokens) + ") exceeds the context length " +
                         std::to_string(cfg.max_context_length),
                     "context_length_exceeded");
  }
  out.req.max_tokens = (int)max_tokens;

  TRY(read_sampling(b, out.req.sampling));
  TRY(read_stop(b, out));
  TRY(f.opt_bool("ignore_eos", out.req.ignore_eos));
  // Extension: speculative decoding for this request ("off", "prompt-lookup", "draft").
  if (f.find("speculative")) {
    std::string mode;
    TRY(f.opt_string("speculative", 32, mode));
    auto m = parse_speculative_mode(mode);
    if (!m) return bad_field("speculative", "'speculative' must be \"off\", \"prompt-lookup\" or \"draft\"");
    out.req.speculative = *m;
  }
  TRY(f.opt_bool("stream", out.stream));
  if (const json* so = f.find("stream_options")) {
    if (!so->is_object()) return bad_field("stream_options", "'stream_options' must be an object");
    ApiError e = Fields(*so).opt_bool("include_usage", out.include_usage);
    if (!e.ok()) return bad_field("stream_options", "'stream_options.include_usage' must be a boolean");
  }
  TRY(read_logprobs(b, chat, out));
  TRY(read_attention(b, ctx));
  TRY(read_structured_output(b, ctx, out));
  if (chat) TRY(read_tool_grammar(out));
  // Extension: a saved session whose tokens start the prompt (server/api_sessions.cpp checks the rest).
  TRY(f.opt_string("session", 256, out.session));
  if (f.find("session") && out.session.empty()) return bad_field("session", "'session' must name a saved session");
  return {};
}

ApiError parse_tokenize(const json& b, TokenizeCall& out) {
  Fields f(b);
  // "prompt" (vLLM) or "content" (llama-server); both are type-checked.
  for (const char* key : {"prompt", "content"}) {
    if (const json* v = f.find(key); v && !v->is_string()) return f.type_error(key, "a string");
  }
  const json* text = f.find("prompt") ? f.find("prompt") : f.find("content");
  if (!text) return bad_field("prompt", "'prompt' (or 'content') must be a string");
  out.text = text->get<std::string>();
  TRY(f.opt_bool("add_special_tokens", out.add_special));
  TRY(f.opt_bool("add_special", out.add_special));
  TRY(f.opt_bool("parse_special", out.parse_special));
  return {};
}

ApiError parse_detokenize(const json& b, int n_vocab, size_t max_tokens, std::vector<int32_t>& out) {
  const json* ts = Fields(b).find("tokens");
  if (!ts || !ts->is_array()) return bad_field("tokens", "'tokens' must be a list of token ids");
  if (ts->size() > max_tokens) {
    return bad_field("tokens", "at most " + std::to_string(max_tokens) + " tokens can be detokenized at once");
  }
  out.reserve(ts->size());
  for (const auto& t : *ts) {
    const bool ok = t.is_number_integer() && !(t.is_number_unsigned() && t.get<uint64_t>() >= (uint64_t)n_vocab) &&
                    t.get<int64_t>() >= 0 && t.get<int64_t>() < n_vocab;
    if (!ok) return bad_field("tokens", "token ids must be integers in [0, " + std::to_string(n_vocab) + ")");
    out.push_back((int32_t)t.get<int64_t>());
  }
  return {};
}

}  // namespace stride::server
