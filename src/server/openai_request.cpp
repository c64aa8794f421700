#include "server/openai_request.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

ApiError bad(const std::string& param, const std::string& message, const std::string& code = "") {
  return {400, message, param, code};
}

// Reads an optional number field within [lo, hi].
template <typename T>
ApiError number(const json& b, const char* key, T lo, T hi, T& out) {
  if (!b.contains(key) || b[key].is_null()) return {};
  const json& v = b[key];
  if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return bad(key, std::string("'") + key + "' must be an integer");
  } else {
    if (!v.is_number()) return bad(key, std::string("'") + key + "' must be a number");
  }
  const T x = v.get<T>();
  if (x < lo || x > hi) {
    return bad(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  out = x;
  return {};
}

ApiError boolean(const json& b, const char* key, bool& out) {
  if (!b.contains(key) || b[key].is_null()) return {};
  if (!b[key].is_boolean()) return bad(key, std::string("'") + key + "' must be a boolean");
  out = b[key].get<bool>();
  return {};
}

#define TRY(expr)                  \
  do {                             \
    ApiError _e = (expr);          \
    if (!_e.ok()) return _e;       \
  } while (0)

ApiError read_prompt(const json& b, const ParseContext& ctx, GenerationCall& out) {
  if (!b.contains("prompt")) return bad("prompt", "'prompt' is required");
  json p = b["prompt"];
  // A batch of one prompt is accepted; several prompts are not (n=1 serving).
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) p = p[0];
  const bool add_bos = ctx.tok->add_bos_default();
  if (p.is_string()) {
    out.prompt_text = p.get<std::string>();
    out.req.prompt = ctx.tok->encode(out.prompt_text, add_bos, true);
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    for (const auto& t : p) {
      if (!t.is_number_integer()) return bad("prompt", "token prompts must be integers");
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= ctx.n_vocab) return bad("prompt", "token id " + std::to_string(id) + " is out of range");
      out.req.prompt.push_back((int32_t)id);
    }
  } else {
    return bad("prompt", "'prompt' must be a string, a list of token ids, or a list of one of those");
  }
  return {};
}

ApiError read_messages(const json& b, const ParseContext& ctx, GenerationCall& out) {
  if (!b.contains("messages") || !b["messages"].is_array() || b["messages"].empty()) {
    return bad("messages", "'messages' must be a non-empty list");
  }
  std::vector<serving::ChatMessage> msgs;
  for (const auto& m : b["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad("messages", "each message needs a string 'role'");
    }
    serving::ChatMessage cm;
    cm.role = m["role"].get<std::string>();
    const json& c = m.contains("content") ? m["content"] : json();
    if (c.is_string()) {
      cm.content = c.get<std::string>();
    } else if (c.is_array()) {  // [{"type":"text","text":...}]
      for (const auto& part : c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
          return bad("messages", "only text content parts are supported");
        }
        cm.content += part["text"].get<std::string>();
      }
    } else if (!c.is_null()) {
      return bad("messages", "message 'content' must be a string or a list of text parts");
    }
    msgs.push_back(std::move(cm));
  }
  if (!ctx.chat->ok()) return bad("messages", ctx.chat->status().message(), "chat_template_unavailable");
  auto text = serving::render_chat(ctx.chat->value(), msgs);
  if (!text.ok()) return bad("messages", text.status().message());
  out.prompt_text = *text;
  out.req.prompt = ctx.tok->encode(*text, ctx.tok->add_bos_default(), true);
  return {};
}

ApiError read_stop(const json& b, GenerationCall& out) {
  if (!b.contains("stop") || b["stop"].is_null()) return {};
  const json& s = b["stop"];
  if (s.is_string()) {
    out.req.stop.push_back(s.get<std::string>());
  } else if (s.is_array() && s.size() <= 16) {
    for (const auto& x : s) {
      if (!x.is_string()) return bad("stop", "'stop' entries must be strings");
      out.req.stop.push_back(x.get<std::string>());
    }
  } else {
    return bad("stop", "'stop' must be a string or a list of at most 16 strings");
  }
  return {};
}

ApiError read_logprobs(const json& b, bool chat, GenerationCall& out) {
  if (!b.contains("logprobs") || b["logprobs"].is_null()) return {};
  if (chat) {
    bool on = false;
    TRY(boolean(b, "logprobs", on));
    int top = 0;
    TRY(number<int>(b, "top_logprobs", 0, 20, top));
    if (on) out.req.top_logprobs = top;
  } else {
    int top = 0;
    TRY(number<int>(b, "logprobs", 0, 20, top));
    out.req.top_logprobs = top;
  }
  out.logprobs = out.req.top_logprobs >= 0;
  return {};
}

}  // namespace

ApiError parse_generation(const json& b, bool chat, const ParseContext& ctx, GenerationCall& out) {
  if (!b.is_object()) return bad("", "the request body must be a JSON object");
  const serving::ServeConfig& cfg = *ctx.cfg;
  out.chat = chat;
  if (b.contains("model") && !b["model"].is_null()) {
    if (!b["model"].is_string()) return bad("model", "'model' must be a string");
    const std::string m = b["model"].get<std::string>();
    if (!m.empty() && m != ctx.model_id) {
      return {404, "the model '" + m + "' does not exist (serving '" + ctx.model_id + "')", "model", "model_not_found"};
    }
  }
  int n = 1;
  TRY(number<int>(b, "n", 1, 128, n));
  if (n != 1) return bad("n", "only n=1 is supported");
  if (b.contains("best_of") && !b["best_of"].is_null() && b["best_of"] != 1) return bad("best_of", "best_of is not supported");
  if (b.value("echo", false) == true) return bad("echo", "echo is not supported");

  TRY(chat ? read_messages(b, ctx, out) : read_prompt(b, ctx, out));
  if (out.req.prompt.empty()) return bad(chat ? "messages" : "prompt", "the prompt is empty");
  if ((int64_t)out.req.prompt.size() > cfg.max_prompt_tokens) {
    return {413,
            "the prompt has " + std::to_string(out.req.prompt.size()) + " tokens; the limit is " +
                std::to_string(cfg.max_prompt_tokens),
            chat ? "messages" : "prompt", "prompt_too_long"};
  }

  const int64_t room = cfg.max_context_length - (int64_t)out.req.prompt.size();
  int max_tokens = chat ? (int)std::min<int64_t>(cfg.max_tokens_cap, room) : 16;
  const char* mt_key = chat && b.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  TRY(number<int>(b, mt_key, 1, 1 << 30, max_tokens));
  if (max_tokens > cfg.max_tokens_cap) {
    return bad(mt_key, std::string("'") + mt_key + "' exceeds the server cap of " + std::to_string(cfg.max_tokens_cap));
  }
  if (max_tokens > room) {
    return bad(mt_key,
               "prompt (" + std::to_string(out.req.prompt.size()) + " tokens) + " + mt_key + " (" +
                   std::to_string(max_tokens) + ") exceeds the context length " + std::to_string(cfg.max_context_length),
               "context_length_exceeded");
  }
  out.req.max_tokens = max_tokens;

  SamplingParams& s = out.req.sampling;
  s.temperature = 1.0f;  // OpenAI's defaults
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  TRY(number<float>(b, "temperature", 0.f, 2.f, s.temperature));
  TRY(number<float>(b, "top_p", 0.f, 1.f, s.top_p));
  if (s.top_p == 0.f) return bad("top_p", "'top_p' must be > 0");
  TRY(number<int>(b, "top_k", -1, 1 << 20, s.top_k));
  TRY(number<float>(b, "min_p", 0.f, 1.f, s.min_p));
  TRY(number<float>(b, "presence_penalty", -2.f, 2.f, s.presence_penalty));
  TRY(number<float>(b, "frequency_penalty", -2.f, 2.f, s.frequency_penalty));
  TRY(number<float>(b, "repetition_penalty", 0.01f, 10.f, s.repeat_penalty));
  int64_t seed = 0;
  if (b.contains("seed") && !b["seed"].is_null()) {
    TRY(number<int64_t>(b, "seed", INT64_MIN, INT64_MAX, seed));
    s.seed = (uint64_t)seed;
  } else {
    s.seed = std::random_device{}();
  }
  TRY(read_stop(b, out));
  TRY(boolean(b, "ignore_eos", out.req.ignore_eos));
  TRY(boolean(b, "stream", out.stream));
  if (b.contains("stream_options") && !b["stream_options"].is_null()) {
    if (!b["stream_options"].is_object()) return bad("stream_options", "'stream_options' must be an object");
    TRY(boolean(b["stream_options"], "include_usage", out.include_usage));
  }
  TRY(read_logprobs(b, chat, out));

  if (b.contains("attention") && !b["attention"].is_null()) {
    if (!b["attention"].is_string()) return bad("attention", "'attention' must be a policy string");
    if (!cfg.allow_request_attention) {
      return bad("attention", "per-request attention policies are disabled (allow_request_attention: false)");
    }
    auto p = parse_policy(b["attention"].get<std::string>());
    if (!p.ok()) return bad("attention", p.status().message());
    // The KV cache holds one policy per layer for all sequences.
    if (!(*p == ctx.attention)) {
      return bad("attention", "this server runs attention '" + policy_to_string(ctx.attention) +
                                  "'; a different per-request policy needs its own engine");
    }
  }
  return {};
}

}  // namespace stride::server
