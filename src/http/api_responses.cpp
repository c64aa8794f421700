// POST /v1/responses: OpenAI's Responses API for text. The request becomes a
// chat completion (responses_request.h); the answer is one response object,
// or the typed event stream (response.created ... response.completed).
#include <chrono>
#include <cstdio>

#include "http/api.h"
#include "http/api_call.h"
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
                 {"usage", nullptr},
                 {"user", rc.user},
                 {"metadata", rc.metadata}};
  }

  const json& response() const { return response_; }
  const std::string& item_id() const { return item_id_; }

  json message_item(const std::string& text, const std::string& status) const {
    json content = json::array();
    if (!text.empty() || status != "in_progress") content.push_back(text_part(text));
    return {{"id", item_id_}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
  }
  static json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
  }

  // The finished object: status from the finish reason, usage, the one message.
  void finish(const serving::Event& ev, const std::string& text) {
    const bool complete = ev.finish_reason == "stop";
    response_["status"] = complete ? "completed" : "incomplete";
    if (!complete) {
      response_["incomplete_details"] = {
          {"reason", ev.finish_reason == "length" ? std::string("max_output_tokens") : ev.finish_reason}};
    }
    response_["output"] = json::array({message_item(text, complete ? "completed" : "incomplete")});
    response_["usage"] = {{"input_tokens", ev.prompt_tokens},
                          {"input_tokens_details", {{"cached_tokens", ev.cached_tokens}}},
                          {"output_tokens", ev.completion_tokens},
                          {"output_tokens_details", {{"reasoning_tokens", 0}}},
                          {"total_tokens", ev.prompt_tokens + ev.completion_tokens}};
  }
  void fail(int http_status, const std::string& message) {
    response_["status"] = "failed";
    response_["error"] = {{"code", http_status >= 500 ? "server_error" : "invalid_request"}, {"message", message}};
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

}  // namespace

void Api::responses(const HttpRequest& req, Responder& res, Call& call) {
  nlohmann::json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  ResponsesCall rc;
  ApiError e = parse_responses(body, parse_context(req, call), rc);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  GenerationCall& g = rc.gen;
  serving::Admission::Slot slot(admission_, client_key(call));
  auto ch = submit_generation(res, call, slot, g);
  if (!ch) return;

  ResponseStream rs(rc, call.id, call.model->id);
  const bool streaming = g.stream;
  if (streaming) {
    if (!res.begin_stream({{"X-Request-Id", call.id}})) return ch->cancel();
    res.write_chunk(rs.event("response.created", {{"response", rs.response()}}));
    res.write_chunk(rs.event("response.in_progress", {{"response", rs.response()}}));
    res.write_chunk(rs.event("response.output_item.added",
                             {{"output_index", 0}, {"item", rs.message_item("", "in_progress")}}));
    nlohmann::json added = rs.at_part();
    added["part"] = ResponseStream::text_part("");
    res.write_chunk(rs.event("response.content_part.added", added));
  }
  std::string text;
  int delivered_tokens = 0, pending_tokens = 0;
  auto hung_up = [&] {
    ch->cancel();
    call.finish_reason = "client_disconnected";
    call.completion_tokens = delivered_tokens;
  };
  for (;;) {
    auto ev = ch->wait_next([&] { return res.client_gone(); });
    if (!ev) return hung_up();
    if (ev->kind == serving::EventKind::Token) {
      pending_tokens += ev->tokens;
      text += ev->text;
      if (!streaming || ev->text.empty()) continue;
      nlohmann::json delta = rs.at_part();
      delta["delta"] = ev->text;
      delta["logprobs"] = nlohmann::json::array();
      if (!res.write_chunk(rs.event("response.output_text.delta", delta))) return hung_up();
      delivered_tokens += pending_tokens;
      pending_tokens = 0;
      continue;
    }
    if (ev->kind == serving::EventKind::Error) {
      const int status = http_status_for(Status(ev->code, ev->message));
      if (!streaming) return error(res, call, status, ev->message);
      rs.fail(status, ev->message);
      res.write_chunk(rs.event("response.failed", {{"response", rs.response()}}));
      return res.end_stream();
    }
    call.completion_tokens = ev->completion_tokens;
    call.finish_reason = ev->finish_reason;
    rs.finish(*ev, text);
    if (!streaming) return json(res, call, 200, dump(rs.response()));
    nlohmann::json done = rs.at_part();
    done["text"] = text;
    done["logprobs"] = nlohmann::json::array();
    res.write_chunk(rs.event("response.output_text.done", done));
    nlohmann::json part_done = rs.at_part();
    part_done["part"] = ResponseStream::text_part(text);
    res.write_chunk(rs.event("response.content_part.done", part_done));
    res.write_chunk(rs.event("response.output_item.done",
                             {{"output_index", 0}, {"item", rs.response()["output"][0]}}));
    const bool complete = rs.response()["status"] == "completed";
    res.write_chunk(rs.event(complete ? "response.completed" : "response.incomplete", {{"response", rs.response()}}));
    return res.end_stream();
  }
}

}  // namespace stride::server
