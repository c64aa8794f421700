#include "http/openai_request.h"

#include <algorithm>
#include <map>
#include <utility>

#include "grammar/json_schema.h"
#include "http/legacy_functions.h"
#include "http/openai_fields.h"
#include "http/openai_prompt.h"
#include "http/scoring_fields.h"
#include "serving/generation_checks.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

#define TRY(expr) STRIDE_API_TRY(expr)

// Fields clients send that this server does not implement: refused with a
// clear error rather than silently ignored (absent, null, or the listed
// harmless value are fine).
ApiError refuse_unsupported(const json& b, bool chat) {
  Fields f(b);
  if (const json* v = f.find("tools"); !chat && v && !(v->is_array() && v->empty())) {
    return bad_field("tools", "'tools' is only accepted by /v1/chat/completions");
  }
  return {};
}

ApiError read_unsupported(const json& b, bool chat, const ParseContext& ctx) {
  Fields f(b);
  std::string model;
  TRY(f.opt_string("model", 1024, model));
  TRY(check_model_name(model, ctx.model_names));
  return refuse_unsupported(b, chat);
}

// n (chat and completions) and best_of (completions): how many branches
// each prompt runs. All of a prompt's branches run in one batch (they share
// its KV pages), so they must fit in the server's batch.
ApiError read_choices(const json& b, bool chat, const ParseContext& ctx, GenerationCall& out) {
  Fields f(b);
  TRY(f.opt_int("n", 1, 128, out.n));
  out.best_of = out.n;
  TRY(f.opt_int("best_of", 1, 128, out.best_of));
  if (chat && f.find("best_of") && !f.find("best_of")->is_null() && out.best_of != 1) {
    return bad_field("best_of", "'best_of' is only accepted by /v1/completions");
  }
  if (chat) out.best_of = out.n;
  if (out.best_of < out.n) return bad_field("best_of", "'best_of' must be greater than or equal to 'n'");
  if (out.stream && out.best_of > out.n) {
    return bad_field("best_of", "'best_of' greater than 'n' cannot be streamed: the best are known only at the end");
  }
  const int max_batch = ctx.cfg->max_batch;
  if (out.best_of > max_batch) {
    const char* key = out.best_of > out.n ? "best_of" : "n";
    return bad_field(key, std::string("'") + key + "' is " + std::to_string(out.best_of) +
                              "; this server runs at most " + std::to_string(max_batch) +
                              " sequences together (max_batch), and a prompt's branches run together");
  }
  return {};
}

// Chat takes either name (max_tokens is OpenAI's older one); both are checked.
// The room left by the prompt is checked once it is tokenized. A completion
// may ask for 0 tokens (OpenAI's minimum): an empty answer.
ApiError read_max_tokens(const json& b, bool chat, int64_t cap, serving::GenerationRequest& g) {
  Fields f(b);
  const int64_t lo = serving::min_max_tokens(chat);
  const bool newer = chat && f.find("max_completion_tokens");
  const char* key = newer ? "max_completion_tokens" : "max_tokens";
  if (newer) {
    int64_t older = 0;
    TRY(f.opt_int("max_tokens", lo, INT32_MAX, older));
    if (older > cap) return api_error(serving::over_max_tokens_cap("max_tokens", cap));
  }
  g.max_tokens_param = key;
  if (!f.find(key)) return {};
  int64_t v = 0;
  TRY(f.opt_int(key, lo, INT32_MAX, v));  // completions: 0 is the prompt alone
  if (v > cap) return api_error(serving::over_max_tokens_cap(key, cap));
  g.max_tokens = v;
  return {};
}

ApiError read_stop(const json& b, serving::GenerationRequest& g) {
  const json* s = Fields(b).find("stop");
  if (!s) return {};
  auto add = [&](const json& x) -> ApiError {
    if (!x.is_string()) return bad_field("stop", "'stop' entries must be strings");
    if (x.get_ref<const std::string&>().size() > kMaxStopBytes) return api_error(serving::stop_size_error());
    g.stop.push_back(x.get<std::string>());
    return {};
  };
  if (s->is_string()) return add(*s);
  if (!s->is_array() || s->empty() || s->size() > kMaxStopStrings) return api_error(serving::stop_list_error());
  for (const auto& x : *s) TRY(add(x));
  return {};
}

ApiError read_logprobs(const json& b, bool chat, serving::GenerationRequest& g) {
  Fields f(b);
  if (chat) {
    bool on = false;
    TRY(f.opt_bool("logprobs", on));
    int top = 0;
    TRY(f.opt_int("top_logprobs", 0, serving::kMaxTopLogprobs, top));
    if (on) g.top_logprobs = top;
  } else if (f.find("logprobs")) {
    int top = 0;
    TRY(f.opt_int("logprobs", 0, serving::kMaxCompletionLogprobs, top));
    g.top_logprobs = top;
  }
  return {};
}

ApiError read_sampling(const json& b, SamplingParams& s) {
  Fields f(b);
  for (const serving::SamplingRange& r : serving::kSamplingRanges) {
    TRY(f.opt_number(r.key, r.lo, r.hi, s.*r.target, r.lo_open));
  }
  TRY(f.opt_int("top_k", -1, serving::kMaxTopK, s.top_k));
  // OpenAI's seed is a signed 64-bit integer.
  int64_t seed = 0;
  TRY(f.opt_int("seed", INT64_MIN, INT64_MAX, seed));
  if (f.find("seed")) s.seed = (uint64_t)seed;
  return {};
}

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

// response_format ({"type": "text" | "json_object" | "json_schema"}) as GBNF.
ApiError read_response_format(const json& rf, const ParseContext& ctx, serving::GrammarSource& out) {
  const char* param = "response_format";
  out.param = param;
  if (!rf.is_object()) return bad_field(param, "'response_format' must be an object");
  const json* type = Fields(rf).find("type");
  if (!type || !type->is_string()) return bad_field(param, "'response_format.type' must be a string");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "json_object") {
    out.gbnf = grammar::json_object_gbnf();
  } else if (t == "json_schema") {
    const json* js = Fields(rf).find("json_schema");
    if (!js || !js->is_object()) return bad_field(param, "'response_format.json_schema' must be an object");
    Fields jf(*js);
    std::string name;
    if (!jf.find("name")) return bad_field(param, "'response_format.json_schema.name' is required");
    ApiError e = jf.opt_string("name", 64, name);
    if (!e.ok()) return bad_field(param, "'response_format.json_schema.name' must be a string of at most 64 bytes");
    grammar::SchemaOptions opts;
    e = jf.opt_bool("strict", opts.strict);
    if (!e.ok()) return bad_field(param, "'response_format.json_schema.strict' must be a boolean");
    const json* schema = jf.find("schema");
    if (!schema) {
      out.gbnf = grammar::json_object_gbnf();
    } else {
      opts.property_order = schema_property_order(ctx.body);
      auto converted = grammar::json_schema_to_gbnf(*schema, opts);
      if (!converted.ok()) return bad_field(param, converted.status().message(), "invalid_schema");
      out.gbnf = std::move(*converted);
      out.generated = true;
    }
  } else if (t != "text") {
    return bad_field(param, "'response_format.type' must be 'text', 'json_object' or 'json_schema'");
  }
  return {};
}

// response_format and the `grammar` extension (GBNF text): one grammar,
// compiled when the request is prepared.
ApiError read_structured_output(const json& b, const ParseContext& ctx, serving::GenerationRequest& g) {
  Fields f(b);
  if (const json* rf = f.find("response_format")) TRY(read_response_format(*rf, ctx, g.grammar));
  const json* gr = f.find("grammar");
  if (!gr) return {};
  if (!g.grammar.gbnf.empty()) return bad_field("grammar", "give either 'grammar' or a JSON 'response_format', not both");
  if (!gr->is_string()) return f.type_error("grammar", "a string");
  g.grammar = {gr->get<std::string>(), "grammar", false};
  if (g.grammar.gbnf.empty()) return bad_field("grammar", "'grammar' must not be empty");
  return {};
}

// stream and stream_options.
ApiError read_stream(const json& b, GenerationCall& out) {
  Fields f(b);
  TRY(f.opt_bool("stream", out.stream));
  if (const json* so = f.find("stream_options")) {
    if (!so->is_object()) return bad_field("stream_options", "'stream_options' must be an object");
    ApiError e = Fields(*so).opt_bool("include_usage", out.include_usage);
    if (!e.ok()) return bad_field("stream_options", "'stream_options.include_usage' must be a boolean");
    bool obfuscation = false;  // padding against length side channels: nothing to pad here
    e = Fields(*so).opt_bool("include_obfuscation", obfuscation);
    if (!e.ok()) return bad_field("stream_options", "'stream_options.include_obfuscation' must be a boolean");
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

ApiError api_error(const serving::RequestError& e) {
  if (e.ok()) return {};
  return {e.kind == serving::RequestError::Kind::TooLong ? 413 : 400, e.message, e.param, e.code};
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

ApiError read_generation(const json& b, bool chat, const ParseContext& ctx, serving::GenerationRequest& g,
                         GenerationCall& out) {
  if (!b.is_object()) return bad_field("", "the request body must be a JSON object");
  Fields f(b);
  out.chat = chat;
  const Endpoint endpoint = chat ? Endpoint::Chat : Endpoint::Completions;
  TRY(check_unknown_fields(b, endpoint, ctx.cfg->strict_requests));
  TRY(check_ignored_fields(b, endpoint));
  TRY(refuse_unimplemented(b, endpoint));
  TRY(read_unsupported(b, chat, ctx));
  if (chat) {
    TRY(read_chat_tools(b, ctx.body, out.tools));
    g.tools = tools_offer(out.tools);
  }
  TRY(chat ? read_messages(b, g) : read_prompt(b, ctx, g));
  TRY(read_max_tokens(b, chat, ctx.cfg->max_tokens_cap, g));
  TRY(read_sampling(b, g.sampling));
  TRY(read_stop(b, g));
  TRY(f.opt_bool("ignore_eos", g.ignore_eos));
  // Extension: speculative decoding for this request ("off", "prompt-lookup", "draft").
  if (f.find("speculative")) {
    std::string mode;
    TRY(f.opt_string("speculative", 32, mode));
    auto m = parse_speculative_mode(mode);
    if (!m) return bad_field("speculative", "'speculative' must be \"off\", \"prompt-lookup\" or \"draft\"");
    g.speculative = *m;
  }
  TRY(read_stream(b, out));
  TRY(read_choices(b, chat, ctx, out));
  if (out.best_of > 1 && g.speculative && *g.speculative != SpeculativeMode::Off) {
    return bad_field("speculative", "speculative decoding runs one branch per prompt: use it with n=1");
  }
  if (g.prompt != serving::GenerationRequest::Prompt::Chat &&
      (int64_t)(1 + g.more_texts.size() + g.more_tokens.size()) * out.best_of > ctx.cfg->max_queue * (int64_t)ctx.cfg->max_batch) {
    return bad_field("prompt", "the batch has more prompts times branches than this server queues (max_queue * max_batch = " +
                                   std::to_string(ctx.cfg->max_queue * (int64_t)ctx.cfg->max_batch) + ")");
  }
  TRY(read_logprobs(b, chat, g));
  TRY(read_scoring_fields(b, chat, ctx.n_vocab, g));
  TRY(read_attention(b, ctx));
  TRY(read_structured_output(b, ctx, g));
  // Extension: a saved session whose tokens start the prompt (http/api_sessions.cpp checks the rest).
  TRY(f.opt_string("session", 256, out.session));
  if (f.find("session") && out.session.empty()) return bad_field("session", "'session' must name a saved session");
  return {};
}

ApiError parse_generation(const json& b, bool chat, const ParseContext& ctx, GenerationCall& out) {
  // Here rather than in read_generation: /infill (llama.cpp's shape) has no required model.
  TRY(check_model_and_nulls(b, chat ? Endpoint::Chat : Endpoint::Completions, ctx.cfg->strict_requests));
  serving::GenerationRequest g;
  TRY(read_generation(b, chat, ctx, g, out));
  return prepare_call(g, ctx, out);
}

ApiError prepare_call(const serving::GenerationRequest& g, const ParseContext& ctx, GenerationCall& out) {
  serving::PreparedGeneration p;
  TRY(api_error(serving::prepare_generation(g, ctx.prepare(), p)));
  out.req = std::move(p.req);
  out.prompt_text = std::move(p.prompt_text);
  out.tools.format = p.tool_format;
  out.logprobs = out.req.top_logprobs >= 0;
  out.prompt_logprobs = out.req.prompt_logprobs >= 0;
  // An echoed prompt as the client wrote it: a text prompt's text, a token prompt decoded.
  auto echo = [&](const serving::GenerationRequest& one, const std::vector<int32_t>& prompt) {
    if (g.echo) out.echo.push_back(one.prompt == serving::GenerationRequest::Prompt::Text ? one.text : ctx.tok->decode(prompt));
  };
  echo(g, out.req.prompt);
  out.req.branches = out.best_of;
  out.req.sum_logprobs = out.best_of > out.n;
  // A batch's other prompts, each prepared (tokenized, its room checked) as if sent alone.
  serving::GenerationRequest one = g;
  std::vector<std::string> texts = std::exchange(one.more_texts, {});
  std::vector<std::vector<int32_t>> token_lists = std::exchange(one.more_tokens, {});
  auto add = [&]() -> ApiError {
    TRY(api_error(serving::prepare_generation(one, ctx.prepare(), p)));
    echo(one, p.req.prompt);
    out.req.more_prompts.push_back(std::move(p.req.prompt));
    return {};
  };
  for (std::string& t : texts) {
    one.text = std::move(t);
    TRY(add());
  }
  for (std::vector<int32_t>& t : token_lists) {
    one.tokens = std::move(t);
    TRY(add());
  }
  out.n_prompts = out.req.n_prompts();
  return {};
}

}  // namespace stride::server
