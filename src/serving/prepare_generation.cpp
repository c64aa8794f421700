#include "serving/prepare_generation.h"

#include <algorithm>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_states.h"
#include "serving/conversation.h"
#include "serving/fim_prompt.h"
#include "serving/generation_checks.h"
#include "serving/tool_format_harmony.h"
#include "serving/tool_format_hermes.h"
#include "serving/tool_format_llama3.h"
#include "serving/tool_format_mistral.h"

namespace stride::serving {

namespace {

#define STRIDE_REQUEST_TRY(expr)   \
  do {                             \
    RequestError _e = (expr);      \
    if (!_e.ok()) return _e;       \
  } while (0)

RequestError tokenize_prompt(const GenerationRequest& g, const PrepareContext& ctx, PreparedGeneration& out) {
  const bool add_bos = ctx.tok->add_bos_default();
  switch (g.prompt) {
    case GenerationRequest::Prompt::Text: {
      out.prompt_text = g.text;
      if (!g.fim) {
        out.req.prompt = ctx.tok->encode(g.text, add_bos, g.parse_special);
        return {};
      }
      auto ids = fim_prompt(*ctx.tok, g.text, g.fim->suffix, g.fim->middle);
      if (!ids.ok()) return invalid_field(g.fim->param, ids.status().message(), "fim_unsupported");
      out.req.prompt = std::move(*ids);
      return {};
    }
    case GenerationRequest::Prompt::Tokens:
      out.req.prompt = g.tokens;
      return {};
    case GenerationRequest::Prompt::Chat: break;
  }
  if (!ctx.chat->ok()) return invalid_field("messages", ctx.chat->status().message(), "chat_template_unavailable");
  out.tool_format = tool_format_of(*ctx.chat);
  // Formats written with control tokens: the reply keeps them as text for its reader.
  out.req.render_special = out.tool_format == ToolFormat::Harmony ||
                           (g.tools.active() && !tool_format_control_texts(out.tool_format).empty());
  auto rendered = render_conversation(g, ctx.chat->value(), out.tool_format);
  if (!rendered.ok()) return invalid_field("messages", rendered.status().message());
  out.prompt_text = rendered->text;
  out.req.prompt = ctx.tok->encode_with_literals(rendered->text, rendered->literal, add_bos);
  return {};
}

RequestError check_prompt_size(const GenerationRequest& g, const ServeConfig& cfg, const PreparedGeneration& out) {
  if (out.req.prompt.empty()) return invalid_field(g.prompt_param(), "the prompt is empty");
  if ((int64_t)out.req.prompt.size() > cfg.max_prompt_tokens) {
    return {RequestError::Kind::TooLong,
            "the prompt has " + std::to_string(out.req.prompt.size()) + " tokens; the limit is " +
                std::to_string(cfg.max_prompt_tokens),
            g.prompt_param(), "prompt_too_long"};
  }
  return {};
}

RequestError set_max_tokens(const GenerationRequest& g, const ServeConfig& cfg, PreparedGeneration& out) {
  const int64_t room = cfg.max_context_length - (int64_t)out.req.prompt.size();
  const bool to_room = g.chat() || g.open_ended;
  const int64_t max_tokens = g.max_tokens ? *g.max_tokens : to_room ? std::min<int64_t>(cfg.max_tokens_cap, room) : 16;
  const std::string& key = g.max_tokens_param;
  if (max_tokens > cfg.max_tokens_cap) return over_max_tokens_cap(key, cfg.max_tokens_cap);
  if (max_tokens > room) {
    return invalid_field(key,
                         "prompt (" + std::to_string(out.req.prompt.size()) + " tokens) + " + key + " (" +
                             std::to_string(max_tokens) + ") exceeds the context length " +
                             std::to_string(cfg.max_context_length),
                         "context_length_exceeded");
  }
  out.req.max_tokens = (int)max_tokens;
  return {};
}

RequestError compile_grammar(const std::string& gbnf, bool generated, const std::string& param,
                             PreparedGeneration& out) {
  grammar::GrammarLimits limits;
  if (generated) limits.max_text_bytes = 8u << 20;  // generated from a body the server already size-checked
  auto compiled = grammar::compile_gbnf(gbnf, limits);
  if (!compiled.ok()) return invalid_field(param, compiled.status().message(), "invalid_grammar");
  // The start state is built here, on the request's thread: a grammar whose
  // first step alone passes the per-token work limit never reaches the engine.
  if (grammar::GrammarStates(*compiled, grammar::GrammarMatcher::kMaxWorkPerToken).exhausted()) {
    return invalid_field(param, "the grammar is too ambiguous to follow (too much parse work for one token)",
                         "invalid_grammar");
  }
  out.req.grammar = std::move(*compiled);
  return {};
}

Expected<std::string> tool_call_grammar(const ToolsOffer& t, ToolFormat format) {
  switch (format) {
    case ToolFormat::Hermes: return hermes_call_gbnf(t.tools, t.choice);
    case ToolFormat::Llama3: return llama3_call_gbnf(t.tools, t.choice);
    case ToolFormat::MistralJson:
    case ToolFormat::MistralArgs: return mistral_call_gbnf(t.tools, t.choice, format == ToolFormat::MistralArgs);
    case ToolFormat::Harmony: return harmony_call_gbnf(t.tools, t.choice);
    case ToolFormat::Generic: break;
  }
  return tool_call_gbnf(t.tools, t.choice);
}

// tool_choice auto, required or a function: decoding follows the calls' grammar.
RequestError set_tool_grammar(const GenerationRequest& g, PreparedGeneration& out) {
  if (!g.chat() || !g.tools.active()) return {};
  if (out.req.grammar) {
    return invalid_field("tools",
                         "'response_format' and 'grammar' cannot be combined with tools unless tool_choice is 'none'");
  }
  const ToolFormat format = out.tool_format;
  // Replies in the formats whose calls follow a marker are, under `auto`,
  // free text that may hold calls (as vLLM and llama-server read them):
  // only a choice that must call is constrained.
  const bool marked = format == ToolFormat::Hermes || format == ToolFormat::MistralJson ||
                      format == ToolFormat::MistralArgs || format == ToolFormat::Harmony;
  if (marked && g.tools.choice.mode == ToolChoiceMode::Auto) return {};
  auto gbnf = tool_call_grammar(g.tools, format);
  if (!gbnf.ok()) return invalid_field("tools", gbnf.status().message(), "invalid_schema");
  return compile_grammar(*gbnf, true, "tools", out);
}

}  // namespace

RequestError prepare_generation(const GenerationRequest& g, const PrepareContext& ctx, PreparedGeneration& out) {
  const ServeConfig& cfg = *ctx.cfg;
  out = PreparedGeneration{};
  STRIDE_REQUEST_TRY(check_limits(g, cfg.max_context_length, ctx.n_vocab));
  STRIDE_REQUEST_TRY(tokenize_prompt(g, ctx, out));
  STRIDE_REQUEST_TRY(check_prompt_size(g, cfg, out));
  STRIDE_REQUEST_TRY(set_max_tokens(g, cfg, out));
  ServeRequest& r = out.req;
  r.sampling = g.sampling;
  for (const std::string& s : g.stop) {
    if (!s.empty()) r.stop.push_back(s);
  }
  r.ignore_eos = g.ignore_eos;
  r.top_logprobs = g.top_logprobs;
  if (g.echo) r.prompt_logprobs = g.top_logprobs;
  r.speculative = g.speculative;
  if (!g.grammar.gbnf.empty()) {
    STRIDE_REQUEST_TRY(compile_grammar(g.grammar.gbnf, g.grammar.generated, g.grammar.param, out));
  }
  return set_tool_grammar(g, out);
}

}  // namespace stride::serving
