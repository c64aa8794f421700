// POST /v1/completions and /v1/chat/completions: validate, submit to the
// scheduler, and relay its events as one JSON body or as Server-Sent Events.
#include <chrono>
#include <optional>

#include "http/api.h"
#include "http/api_call.h"
#include "http/generation_relay.h"
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

// Appends the completions-shape log-probs `more` to `into` (either may be null).
void append_logprobs(nlohmann::json& into, const nlohmann::json& more) {
  if (more.is_null()) return;
  if (into.is_null()) {
    into = more;
    return;
  }
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const auto& x : more[key]) into[key].push_back(x);
  }
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

// The events of one completion, turned into its response: accumulated into
// one JSON body, or streamed as chunks as they arrive.
class Api::CompletionRelay final : public GenerationRelay {
 public:
  CompletionRelay(Api& api, Call& call, std::unique_ptr<serving::Admission::Slot> slot, GenerationCall g, bool chat)
      : GenerationRelay(api, call, std::move(slot), g.stream),
        g_(std::move(g)),
        tok_(*call.model->engine->tokenizer()),
        ids_{(chat ? "chatcmpl-" : "cmpl-") + call.id.substr(4), call.model->id,
             (int64_t)std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch()).count(),
             chat} {
    // Tools offered (the reply may be calls) or a format with channels (reasoning apart).
    const bool channels = g_.tools.format == serving::ToolFormat::Harmony;
    if (chat && (g_.tools.active() || channels)) {
      tool_stream_.emplace(g_.tools.format, g_.tools.active(), g_.tools.legacy_functions);
    }
    if (g_.echo) text_ = *g_.echo;  // completions: the text starts with the prompt
  }

 private:
  void write_head(Responder& res) override {
    if (ids_.chat) res.write_chunk(sse(chunk_json(ids_, "", "", nullptr, true)));
    // An echoed prompt goes first; when it is scored, with its log-probs, once they come.
    if (g_.echo && !g_.prompt_logprobs) res.write_chunk(sse(chunk_json(ids_, *g_.echo, "", nullptr)));
  }

  void write_stream_error(int http_status, const std::string& message, Responder& res) override {
    res.write_chunk(sse(error_body(http_status, message)));
    res.write_chunk("data: [DONE]\n\n");
  }

  void on_token(const serving::Event& ev, Responder& res) override {
    generated(ev.tokens);
    if (!ev.prompt_logprobs.empty()) {
      prompt_lp_ = logprobs_json(ev.prompt_logprobs, tok_, false, 0);
      if (g_.stream && !res.write_chunk(sse(chunk_json(ids_, *g_.echo, "", prompt_lp_)))) return;
    }
    if (!g_.stream) {
      text_ += ev.text;
      lps_.insert(lps_.end(), ev.logprobs.begin(), ev.logprobs.end());
      return;
    }
    if (ev.text.empty() && ev.logprobs.empty()) return;
    bool sent = true;
    if (tool_stream_) {
      // Log-probs ride on the next delta that goes out (text may be held back).
      lps_.insert(lps_.end(), ev.logprobs.begin(), ev.logprobs.end());
      text_ += ev.text;
      sent = write_deltas(res, ids_, tool_stream_->update(text_), g_.logprobs ? &lps_ : nullptr, tok_);
    } else {
      const nlohmann::json lp = g_.logprobs ? logprobs_json(ev.logprobs, tok_, ids_.chat, text_.size()) : nlohmann::json();
      text_ += ev.text;
      sent = res.write_chunk(sse(chunk_json(ids_, ev.text, "", lp)));
    }
    if (sent) written();  // else the client is gone: the session ends the request
  }

  void write_finish(const serving::Event& ev, Responder& res) override {
    const bool chat = ids_.chat;
    if (!g_.stream) {
      const size_t offset = g_.echo ? g_.echo->size() : 0;
      nlohmann::json lp = g_.logprobs ? logprobs_json(lps_, tok_, chat, offset) : nlohmann::json();
      if (!prompt_lp_.is_null()) {
        nlohmann::json generated = std::move(lp);
        lp = prompt_lp_;
        append_logprobs(lp, generated);
      }
      nlohmann::json body = completion_json(ids_, text_, ev.finish_reason, lp,
                                            usage_json(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens));
      if (chat && (g_.tools.active() || g_.tools.format == serving::ToolFormat::Harmony)) {
        apply_tool_calls(body, text_, g_.tools.format, g_.tools.active(), g_.tools.legacy_functions);
      }
      return api_.json(res, call_, 200, dump(body));
    }
    std::string finish = ev.finish_reason;
    if (tool_stream_) {
      std::vector<serving::TokenLogprob> held = lps_;
      write_deltas(res, ids_, tool_stream_->finish(text_, finish), g_.logprobs ? &held : nullptr, tok_);
    }
    res.write_chunk(sse(chunk_json(ids_, "", finish, nullptr)));
    if (g_.include_usage) {
      nlohmann::json u = chunk_json(ids_, "", "", nullptr);
      u["choices"] = nlohmann::json::array();
      u["usage"] = usage_json(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens);
      res.write_chunk(sse(u));
    }
    res.write_chunk("data: [DONE]\n\n");
    res.end_stream();
  }

  const GenerationCall g_;
  const Tokenizer& tok_;
  const ResponseIds ids_;
  std::string text_;
  std::vector<serving::TokenLogprob> lps_;
  nlohmann::json prompt_lp_;  // an echoed prompt's log-probs (completions shape)
  std::optional<ToolReplyStream> tool_stream_;
};

void Api::generate(const HttpRequest& req, Responder& res, Call& call, bool chat) {
  nlohmann::json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  GenerationCall g;
  ApiError e = parse_generation(body, chat, parse_context(req, call), g);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  if (!g.session.empty() && !attach_session(res, call, g)) return;
  auto slot = std::make_unique<serving::Admission::Slot>(admission_, client_key(call));
  auto ch = submit_generation(res, call, *slot, g);
  if (!ch) return;
  auto relay = std::make_unique<CompletionRelay>(*this, call, std::move(slot), std::move(g), chat);
  relay->open(res);
  res.relay(std::move(ch), std::move(relay));
}

}  // namespace stride::server
