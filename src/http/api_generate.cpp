// POST /v1/completions and /v1/chat/completions: validate, submit to the
// scheduler, and relay its events as one JSON body or as Server-Sent Events.
#include <algorithm>
#include <chrono>
#include <optional>

#include "http/api_generate.h"
#include "http/api_sessions.h"
#include "http/generation_relay.h"
#include "http/openai_request.h"
#include "http/openai_response.h"
#include "http/tool_reply.h"

namespace stride::server {

using serving::Clock;

namespace {

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

// The events of one completion request, turned into its response: each
// choice's (n, best_of, batched prompts: Event::index) accumulated into one
// JSON body, or streamed as chunks that carry their choice's index.
class CompletionRelay final : public GenerationRelay {
 public:
  CompletionRelay(ApiHandler& api, ApiCall& call, std::unique_ptr<serving::Admission::Slot> slot, GenerationCall g, bool chat)
      : GenerationRelay(api, call, std::move(slot), g.stream),
        g_(std::move(g)),
        tok_(*call.model->engine->tokenizer()),
        ids_{(chat ? "chatcmpl-" : "cmpl-") + call.id.substr(4), call.model->id,
             (int64_t)std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch()).count(),
             chat},
        choices_((size_t)g_.n_prompts * g_.best_of) {
    // Tools offered (the reply may be calls) or a format with channels (reasoning apart).
    const bool channels = g_.tools.format == serving::ToolFormat::Harmony;
    if (chat && (g_.tools.active() || channels))
      for (Choice& c : choices_) c.tool_stream.emplace(g_.tools.format, g_.tools.active(), g_.tools.legacy_functions);
    // Completions `echo`: each choice's text starts with its prompt.
    if (echoed()) for (size_t i = 0; i < choices_.size(); ++i) choices_[i].text = echo_of(i);
  }

  void write_head(Responder& res) override {
    if (ids_.chat)
      for (size_t i = 0; i < choices_.size(); ++i)
        res.write_chunk(sse(indexed(chunk_json(ids_, "", "", nullptr, true), (int)i)));
    // An echoed prompt goes first; when it is scored, with its log-probs, once they come.
    if (echoed() && !g_.prompt_logprobs)
      for (size_t i = 0; i < choices_.size(); ++i) res.write_chunk(sse(indexed(chunk_json(ids_, echo_of(i), "", nullptr), (int)i)));
  }

  void write_stream_error(int http_status, const std::string& message, Responder& res) override {
    res.write_chunk(sse(error_body(http_status, message)));
    res.write_chunk("data: [DONE]\n\n");
  }

  void on_token(const serving::Event& ev, Responder& res) override {
    if (ev.index < 0 || ev.index >= (int)choices_.size()) return;
    on_choice_token(choices_[(size_t)ev.index], ev, res);
  }

  // One choice finished; the answer is complete when every choice has.
  bool write_finish(const serving::Event& ev, Responder& res) override {
    if (ev.index < 0 || ev.index >= (int)choices_.size()) return false;
    Choice& c = choices_[(size_t)ev.index];
    c.finished = true;
    c.finish_reason = ev.finish_reason;
    c.prompt_tokens = ev.prompt_tokens;
    c.completion_tokens = ev.completion_tokens;
    c.cached_tokens = ev.cached_tokens;
    c.logprob_sum = ev.logprob_sum;
    if (g_.stream) write_choice_finish(c, ev.index, res);
    if (++finished_ < choices_.size()) return false;
    write_end(res);
    return true;
  }


 private:
  struct Choice {
    std::string text;
    nlohmann::json prompt_lps;  // an echoed prompt's log-probs (completions shape), once scored
    std::vector<serving::TokenLogprob> lps;
    std::optional<ToolReplyStream> tool_stream;
    bool finished = false;
    std::string finish_reason;
    int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
    double logprob_sum = 0;
  };

  static nlohmann::json indexed(nlohmann::json chunk, int index) {
    chunk["choices"][0]["index"] = index;
    return chunk;
  }

  bool echoed() const { return !g_.echo.empty(); }
  // The prompt choice i echoes: choices are [prompts * branches].
  const std::string& echo_of(size_t i) const { return g_.echo[i / (size_t)g_.best_of]; }

  // A prompt's log-probs, scored by its first branch (or by a branch that
  // could not fork and ran the prompt itself): every branch of that prompt
  // still without them takes them, and streamed, sends them with its echo.
  bool take_prompt_logprobs(const serving::Event& ev, Responder& res) {
    const nlohmann::json lp = logprobs_json(ev.prompt_logprobs, tok_, false, 0);
    const size_t first = (size_t)ev.index / (size_t)g_.best_of * (size_t)g_.best_of;
    for (size_t i = first; i < first + (size_t)g_.best_of; ++i) {
      if (!choices_[i].prompt_lps.is_null()) continue;
      choices_[i].prompt_lps = lp;
      if (g_.stream && !res.write_chunk(sse(indexed(chunk_json(ids_, echo_of(i), "", lp), (int)i)))) return false;
    }
    return true;
  }

  void on_choice_token(Choice& c, const serving::Event& ev, Responder& res) {
    generated(ev.tokens);
    if (!ev.prompt_logprobs.empty() && echoed() && !take_prompt_logprobs(ev, res)) return;
    if (!g_.stream) {
      c.text += ev.text;
      c.lps.insert(c.lps.end(), ev.logprobs.begin(), ev.logprobs.end());
      return;
    }
    if (ev.text.empty() && ev.logprobs.empty()) return;
    bool sent = true;
    if (c.tool_stream) {
      // Log-probs ride on the next delta that goes out (text may be held back).
      c.lps.insert(c.lps.end(), ev.logprobs.begin(), ev.logprobs.end());
      c.text += ev.text;
      sent = write_deltas(res, ev.index, c.tool_stream->update(c.text), g_.logprobs ? &c.lps : nullptr);
    } else {
      const nlohmann::json lp =
          g_.logprobs ? logprobs_json(ev.logprobs, tok_, ids_.chat, c.text.size()) : nlohmann::json();
      c.text += ev.text;
      sent = res.write_chunk(sse(indexed(chunk_json(ids_, ev.text, "", lp), ev.index)));
    }
    if (sent) written();  // else the client is gone: the session ends the request
  }

  // Chat chunks of `deltas`; pending log-probs go with the first. False: the client is gone.
  bool write_deltas(Responder& res, int index, const std::vector<nlohmann::json>& deltas,
                    std::vector<serving::TokenLogprob>* lps) {
    for (const nlohmann::json& d : deltas) {
      nlohmann::json lp;
      if (lps && !lps->empty()) {
        lp = logprobs_json(*lps, tok_, true, 0);
        lps->clear();
      }
      if (!res.write_chunk(sse(indexed(delta_chunk_json(ids_, d, "", lp), index)))) return false;
    }
    return true;
  }

  void write_choice_finish(Choice& c, int index, Responder& res) {
    std::string finish = c.finish_reason;
    if (c.tool_stream) {
      std::vector<serving::TokenLogprob> held = c.lps;
      write_deltas(res, index, c.tool_stream->finish(c.text, finish), g_.logprobs ? &held : nullptr);
    }
    res.write_chunk(sse(indexed(chunk_json(ids_, "", finish, nullptr), index)));
  }

  // Usage: each prompt once (its first branch reports it), every branch's tokens.
  nlohmann::json usage() const {
    const serving::ServeConfig& cfg = api_.config();
    int prompt = 0, completion = 0, cached = 0, cache_written = 0;
    for (size_t i = 0; i < choices_.size(); ++i) {
      const Choice& c = choices_[i];
      completion += c.completion_tokens;
      if (i % (size_t)g_.best_of != 0) continue;
      prompt += c.prompt_tokens;
      cached += c.cached_tokens;
      cache_written += cache_write_tokens(c.prompt_tokens, c.cached_tokens, cfg.page_size, cfg.cache_reuse);
    }
    return usage_json(prompt, completion, cached, cache_written);
  }

  // The choices returned, in index order: every branch, or with best_of the
  // n of each prompt with the highest log-prob sums, best first.
  std::vector<size_t> returned() const {
    std::vector<size_t> out;
    const size_t branches = (size_t)g_.best_of;
    for (size_t first = 0; first < choices_.size(); first += branches) {
      std::vector<size_t> order(branches);
      for (size_t b = 0; b < branches; ++b) order[b] = first + b;
      if (g_.best_of > g_.n)
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return choices_[a].logprob_sum > choices_[b].logprob_sum; });
      out.insert(out.end(), order.begin(), order.begin() + g_.n);
    }
    return out;
  }

  void write_end(Responder& res) {
    const nlohmann::json u = usage();
    call_.completion_tokens = u["completion_tokens"].get<int>();
    call_.finish_reason = choices_[0].finish_reason;
    if (!g_.stream) return write_body(u, res);
    if (g_.include_usage) {
      nlohmann::json chunk = chunk_json(ids_, "", "", nullptr);
      chunk["choices"] = nlohmann::json::array();
      chunk["usage"] = u;
      res.write_chunk(sse(chunk));
    }
    res.write_chunk("data: [DONE]\n\n");
    res.end_stream();
  }

  void write_body(const nlohmann::json& u, Responder& res) {
    const bool chat = ids_.chat;
    nlohmann::json body;
    nlohmann::json list = nlohmann::json::array();
    for (size_t i : returned()) {
      const Choice& c = choices_[i];
      const size_t offset = echoed() ? echo_of(i).size() : 0;
      nlohmann::json lp = g_.logprobs ? logprobs_json(c.lps, tok_, chat, offset) : nlohmann::json();
      if (!c.prompt_lps.is_null()) {
        nlohmann::json generated = std::move(lp);
        lp = c.prompt_lps;
        append_logprobs(lp, generated);
      }
      nlohmann::json one = completion_json(ids_, c.text, c.finish_reason, lp, u);
      if (chat && (g_.tools.active() || g_.tools.format == serving::ToolFormat::Harmony)) {
        apply_tool_calls(one, c.text, g_.tools.format, g_.tools.active(), g_.tools.legacy_functions);
      }
      settle_finish_reason(one["choices"][0]);
      one["choices"][0]["index"] = list.size();
      list.push_back(std::move(one["choices"][0]));
      if (body.is_null()) body = std::move(one);
    }
    body["choices"] = std::move(list);
    return api_.json(res, call_, 200, dump(body));
  }

  const GenerationCall g_;
  const Tokenizer& tok_;
  const ResponseIds ids_;
  std::vector<Choice> choices_;  // [prompts * branches]
  size_t finished_ = 0;
};

}  // namespace

void CompletionsHandler::generate(const HttpRequest& req, Responder& res, ApiCall& call, bool chat) {
  nlohmann::json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  GenerationCall g;
  ApiError e = parse_generation(body, chat, parse_context(req, call), g);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  if (!g.session.empty() && !sessions_.attach_session(res, call, g)) return;
  auto slot = std::make_unique<serving::Admission::Slot>(admission_, client_key(call));
  auto ch = submit_generation(res, call, *slot, g);
  if (!ch) return;
  auto relay = std::make_unique<CompletionRelay>(*this, call, std::move(slot), std::move(g), chat);
  relay->open(res);
  res.relay(std::move(ch), std::move(relay));
}

}  // namespace stride::server
