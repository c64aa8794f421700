// POST /v1/completions and /v1/chat/completions: validate, submit to the
// scheduler, and relay its events as one JSON body or as Server-Sent Events.
#include <chrono>
#include <optional>

#include "http/api.h"
#include "http/api_call.h"
#include "http/openai_request.h"
#include "http/openai_response.h"
#include "http/tool_reply.h"

namespace stride::server {

using serving::Clock;

namespace {

// Chat chunks of `deltas`; pending log-probs go with the first. False: the client is gone.
bool write_deltas(Responder& res, const ResponseIds& ids, const std::vector<nlohmann::json>& deltas,
                  std::vector<serving::TokenLogprob>* lps, const Tokenizer& tok) {
  for (const nlohmann::json& d : deltas) {
    nlohmann::json lp;
    if (lps && !lps->empty()) {
      lp = logprobs_json(*lps, tok, true, 0);
      lps->clear();
    }
    if (!res.write_chunk(sse(delta_chunk_json(ids, d, "", lp)))) return false;
  }
  return true;
}

}  // namespace

ParseContext Api::parse_context(const HttpRequest& req, const Call& call) const {
  ParseContext ctx;
  ctx.cfg = &cfg_;
  ctx.tok = call.model->engine->tokenizer();
  ctx.chat = &call.model->chat;
  ctx.model_id = call.model->id;
  ctx.model_names = call.model->names;
  ctx.attention = call.model->attention;
  ctx.n_vocab = call.model->engine->config().n_vocab;
  ctx.body = req.body();
  return ctx;
}

std::shared_ptr<serving::RequestChannel> Api::submit_generation(Responder& res, Call& call,
                                                                const serving::Admission::Slot& slot,
                                                                GenerationCall& g) {
  call.prompt_tokens = (int)g.req.prompt.size();
  if (cfg_.audit_log_prompts) call.prompt = g.prompt_text;
  g.req.id = call.id;
  g.req.deadline = Clock::now() + std::chrono::microseconds((int64_t)(cfg_.request_timeout_s * 1e6));
  auto refused = slot.refusal();
  if (refused) {
    refuse(res, call, *refused);
    return nullptr;
  }
  auto ch = std::make_shared<serving::RequestChannel>(std::move(g.req));
  if ((refused = admission_.submit(*call.model->scheduler, ch))) {
    refuse(res, call, *refused);
    return nullptr;
  }
  return ch;
}

void Api::generate(const HttpRequest& req, Responder& res, Call& call, bool chat) {
  nlohmann::json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  GenerationCall g;
  ApiError e = parse_generation(body, chat, parse_context(req, call), g);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  if (!g.session.empty() && !attach_session(res, call, g)) return;
  serving::Admission::Slot slot(admission_, client_key(call));
  auto ch = submit_generation(res, call, slot, g);
  if (!ch) return;
  relay_events(res, call, *ch, g, chat);
}

void Api::relay_events(Responder& res, Call& call, serving::RequestChannel& chan, const GenerationCall& g,
                       bool chat) {
  serving::RequestChannel* ch = &chan;
  const Tokenizer& tok = *call.model->engine->tokenizer();
  ResponseIds ids{(chat ? "chatcmpl-" : "cmpl-") + call.id.substr(4), call.model->id,
                  (int64_t)std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count(),
                  chat};
  std::string text;
  std::vector<serving::TokenLogprob> lps;
  bool streaming = g.stream;
  // Tools offered (the reply may be calls) or a format with channels (reasoning apart).
  std::optional<ToolReplyStream> tool_stream;
  const bool channels = g.tools.format == serving::ToolFormat::Harmony;
  if (chat && (g.tools.active() || channels)) tool_stream.emplace(g.tools.format, g.tools.active());
  int delivered_tokens = 0;  // written to the client (the audit log's count when it hangs up)
  int pending_tokens = 0;    // generated, text held back
  if (streaming) {
    if (!res.begin_stream({{"X-Request-Id", call.id}})) return ch->cancel();
    if (chat) res.write_chunk(sse(chunk_json(ids, "", "", nullptr, true)));
  }
  // A client that hung up is noticed within ~50 ms whether or not tokens are
  // flowing; the scheduler then frees its pages at its next step.
  for (;;) {
    auto ev = ch->wait_next([&] { return res.client_gone(); });
    if (!ev) {
      call.finish_reason = "client_disconnected";
      call.completion_tokens = delivered_tokens;
      return;
    }
    if (ev->kind == serving::EventKind::Token) {
      pending_tokens += ev->tokens;
      if (!streaming) {
        text += ev->text;
        lps.insert(lps.end(), ev->logprobs.begin(), ev->logprobs.end());
        continue;
      }
      if (ev->text.empty() && ev->logprobs.empty()) continue;
      bool sent = true;
      if (tool_stream) {
        // Log-probs ride on the next delta that goes out (text may be held back).
        lps.insert(lps.end(), ev->logprobs.begin(), ev->logprobs.end());
        text += ev->text;
        sent = write_deltas(res, ids, tool_stream->update(text), g.logprobs ? &lps : nullptr, tok);
      } else {
        const nlohmann::json lp = g.logprobs ? logprobs_json(ev->logprobs, tok, chat, text.size()) : nlohmann::json();
        text += ev->text;
        sent = res.write_chunk(sse(chunk_json(ids, ev->text, "", lp)));
      }
      if (!sent) {
        ch->cancel();
        call.finish_reason = "client_disconnected";
        call.completion_tokens = delivered_tokens;
        return;
      }
      delivered_tokens += pending_tokens;
      pending_tokens = 0;
      continue;
    }
    if (ev->kind == serving::EventKind::Error) {
      const int status = http_status_for(Status(ev->code, ev->message));
      if (!streaming) return error(res, call, status, ev->message);
      res.write_chunk(sse(error_body(status, ev->message)));
      res.write_chunk("data: [DONE]\n\n");
      res.end_stream();
      return;
    }
    return finish_events(res, call, *ev, ids, g, text, lps, streaming, tool_stream ? &*tool_stream : nullptr);
  }
}

void Api::finish_events(Responder& res, Call& call, const serving::Event& ev, const ResponseIds& ids,
                        const GenerationCall& g, const std::string& text,
                        const std::vector<serving::TokenLogprob>& lps, bool streaming, ToolReplyStream* tools) {
  const bool chat = ids.chat;
  const Tokenizer& tok = *call.model->engine->tokenizer();
  call.completion_tokens = ev.completion_tokens;
  call.finish_reason = ev.finish_reason;
  if (!streaming) {
    const nlohmann::json lp = g.logprobs ? logprobs_json(lps, tok, chat, 0) : nlohmann::json();
    nlohmann::json body = completion_json(ids, text, ev.finish_reason, lp,
                                          usage_json(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens));
    if (chat && (g.tools.active() || g.tools.format == serving::ToolFormat::Harmony)) {
      apply_tool_calls(body, text, g.tools.format, g.tools.active());
    }
    return json(res, call, 200, dump(body));
  }
  std::string finish = ev.finish_reason;
  if (tools) {
    std::vector<serving::TokenLogprob> held = lps;
    write_deltas(res, ids, tools->finish(text, finish), g.logprobs ? &held : nullptr, tok);
  }
  res.write_chunk(sse(chunk_json(ids, "", finish, nullptr)));
  if (g.include_usage) {
    nlohmann::json u = chunk_json(ids, "", "", nullptr);
    u["choices"] = nlohmann::json::array();
    u["usage"] = usage_json(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens);
    res.write_chunk(sse(u));
  }
  res.write_chunk("data: [DONE]\n\n");
  res.end_stream();
}

}  // namespace stride::server
