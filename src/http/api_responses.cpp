// POST /v1/responses: OpenAI's Responses API for text. The request becomes a
// chat completion (responses_request.h); the answer is one response object,
// or the typed event stream (response.created ... response.completed).
#include <chrono>
#include <cstdio>
#include <vector>

#include "http/api_responses.h"
#include "http/generation_relay.h"
#include "http/openai_response.h"
#include "http/responses_request.h"

namespace stride::server {

using json = nlohmann::json;

namespace {

// The response object and its typed SSE events (sequence-numbered).
class ResponseStream {
 public:
  ResponseStream(const ResponsesCall& rc, const std::string& call_id, const std::string& model) {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    item_id_ = "msg_" + call_id.substr(4);
    response_ = {{"id", "resp_" + call_id.substr(4)},
                 {"object", "response"},
                 {"created_at", now},
                 {"status", "in_progress"},
                 {"error", nullptr},
                 {"incomplete_details", nullptr},
                 {"instructions", rc.instructions},
                 {"max_output_tokens", rc.max_output_tokens},
                 {"model", model},
                 {"output", json::array()},
                 {"parallel_tool_calls", true},
                 {"previous_response_id", nullptr},
                 {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
                 {"store", false},
                 {"temperature", rc.temperature},
                 {"text", {{"format", rc.text_format}}},
                 {"tool_choice", "auto"},
                 {"tools", json::array()},
                 {"top_p", rc.top_p},
                 {"truncation", "disabled"},
                 {"metadata", rc.metadata}};
    // OpenAI types both as non-null: usage appears with the finished object, user only when given.
    if (rc.user.is_string()) response_["user"] = rc.user;
  }

  const json& response() const { return response_; }
  const std::string& item_id() const { return item_id_; }

  json message_item(const std::string& text, const std::string& status, const json& logprobs) const {
    json content = json::array();
    if (!text.empty() || status != "in_progress") content.push_back(text_part(text, logprobs));
    return {{"id", item_id_}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
  }
  // `logprobs`: the text's tokens in chat's logprobs.content shape (empty unless include asked for them).
  static json text_part(const std::string& text, const json& logprobs) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", logprobs}};
  }

  // The finished object: status from the finish reason, usage, the one message.
  // OpenAI's values: a cap or the server's deadline ("timeout") is
  // "incomplete" for max_output_tokens, a cancelled request "cancelled";
  // stride's reason, where it says more, is "stride_finish_reason".
  void finish(const serving::Event& ev, const std::string& text, const json& logprobs, int cache_write_tokens) {
    const std::string& reason = ev.finish_reason;
    const bool complete = reason == "stop";
    const bool cancelled = reason == "cancelled";
    response_["status"] = complete ? "completed" : cancelled ? "cancelled" : "incomplete";
    if (!complete && !cancelled) response_["incomplete_details"] = {{"reason", "max_output_tokens"}};
    if (!complete && reason != "length") response_["stride_finish_reason"] = reason;
    response_["output"] = json::array({message_item(text, complete ? "completed" : "incomplete", logprobs)});
    response_["usage"] = {{"input_tokens", ev.prompt_tokens},
                          {"input_tokens_details",
                           {{"cached_tokens", ev.cached_tokens}, {"cache_write_tokens", cache_write_tokens}}},
                          {"output_tokens", ev.completion_tokens},
                          {"output_tokens_details", {{"reasoning_tokens", 0}}},
                          {"total_tokens", ev.prompt_tokens + ev.completion_tokens}};
  }
  void fail(int http_status, const std::string& message) {
    response_["status"] = "failed";
    // The codes OpenAI's ResponseErrorCode defines.
    const char* code = http_status == 429 ? "rate_limit_exceeded" : http_status == 400 ? "invalid_prompt" : "server_error";
    response_["error"] = {{"code", code}, {"message", message}};
  }

  // "event: TYPE\ndata: {...}\n\n" with the type and sequence number inside.
  std::string event(const std::string& type, json payload) {
    payload["type"] = type;
    payload["sequence_number"] = sequence_++;
    return "event: " + type + "\ndata: " + dump(payload) + "\n\n";
  }
  json at_part() const { return {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0}}; }

 private:
  json response_;
  std::string item_id_;
  int sequence_ = 0;
};

// The events of one Responses request, turned into the response object or
// its typed event stream.
class ResponsesRelay final : public GenerationRelay {
 public:
  ResponsesRelay(ApiHandler& api, ApiCall& call, std::unique_ptr<serving::Admission::Slot> slot, const ResponsesCall& rc)
      : GenerationRelay(api, call, std::move(slot), rc.gen.stream),
        rs_(rc, call.id, call.model->id),
        tok_(*call.model->engine->tokenizer()),
        logprobs_(rc.gen.logprobs) {}

 private:
  void write_head(Responder& res) override {
    res.write_chunk(rs_.event("response.created", {{"response", rs_.response()}}));
    res.write_chunk(rs_.event("response.in_progress", {{"response", rs_.response()}}));
    res.write_chunk(rs_.event("response.output_item.added",
                              {{"output_index", 0}, {"item", rs_.message_item("", "in_progress", lps_)}}));
    nlohmann::json added = rs_.at_part();
    added["part"] = ResponseStream::text_part("", lps_);
    res.write_chunk(rs_.event("response.content_part.added", added));
  }

  void on_token(const serving::Event& ev, Responder& res) override {
    generated(ev.tokens);
    text_ += ev.text;
    // A token's log-prob goes out with the next delta (text may be held back until it is whole UTF-8).
    if (logprobs_) held_.insert(held_.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (!streaming_ || ev.text.empty()) return;
    nlohmann::json delta = rs_.at_part();
    delta["delta"] = ev.text;
    delta["logprobs"] = take_held();
    if (res.write_chunk(rs_.event("response.output_text.delta", delta))) written();  // else gone: the session ends it
  }

  void write_stream_error(int http_status, const std::string& message, Responder& res) override {
    rs_.fail(http_status, message);
    res.write_chunk(rs_.event("response.failed", {{"response", rs_.response()}}));
  }

  bool write_finish(const serving::Event& ev, Responder& res) override {
    const serving::ServeConfig& cfg = api_.config();
    take_held();
    rs_.finish(ev, text_, lps_, cache_write_tokens(ev.prompt_tokens, ev.cached_tokens, cfg.page_size, cfg.cache_reuse));
    if (!streaming_) {
      api_.json(res, call_, 200, dump(rs_.response()));
      return true;
    }
    nlohmann::json done = rs_.at_part();
    done["text"] = text_;
    done["logprobs"] = lps_;
    res.write_chunk(rs_.event("response.output_text.done", done));
    nlohmann::json part_done = rs_.at_part();
    part_done["part"] = ResponseStream::text_part(text_, lps_);
    res.write_chunk(rs_.event("response.content_part.done", part_done));
    res.write_chunk(rs_.event("response.output_item.done",
                              {{"output_index", 0}, {"item", rs_.response()["output"][0]}}));
    // A cancelled response has no stream event of its own: it ends as response.incomplete does.
    const bool complete = rs_.response()["status"] == "completed";
    res.write_chunk(rs_.event(complete ? "response.completed" : "response.incomplete", {{"response", rs_.response()}}));
    res.end_stream();
    return true;
  }

  // The held tokens' log-probs (chat's logprobs.content entries), added to the text's.
  nlohmann::json take_held() {
    if (held_.empty()) return nlohmann::json::array();
    nlohmann::json out = logprobs_json(held_, tok_, /*chat=*/true, 0)["content"];
    held_.clear();
    for (const auto& one : out) lps_.push_back(one);
    return out;
  }

  ResponseStream rs_;
  const Tokenizer& tok_;
  const bool logprobs_;
  std::string text_;
  std::vector<serving::TokenLogprob> held_;  // log-probs not yet written
  nlohmann::json lps_ = nlohmann::json::array();  // every written token's, for the done events and the object
};

}  // namespace

void ResponsesHandler::responses(const HttpRequest& req, Responder& res, ApiCall& call) {
  nlohmann::json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  ResponsesCall rc;
  ApiError e = parse_responses(body, parse_context(req, call), rc);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  auto slot = std::make_unique<serving::Admission::Slot>(admission_, client_key(call));
  auto ch = submit_generation(res, call, *slot, rc.gen);
  if (!ch) return;
  auto relay = std::make_unique<ResponsesRelay>(*this, call, std::move(slot), rc);
  relay->open(res);
  res.relay(std::move(ch), std::move(relay));
}

}  // namespace stride::server
