// POST /infill, llama-server's fill-in-the-middle endpoint: the request is
// read onto the completions path (http/infill_request.h) and the answer is
// written in llama-server's shape: one JSON body, or with "stream": true
// `data:` lines of {"content", "stop": false} and a last one with "stop": true.
#include "http/api_infill.h"
#include "http/infill_request.h"
#include "http/openai_response.h"

namespace stride::server {

namespace {

// llama-server's stop_type for a finish reason.
const char* stop_type(const std::string& finish) {
  if (finish == "length") return "limit";
  if (finish == "stop") return "eos";
  return "none";
}

class InfillRelay final : public EventRelay {
 public:
  InfillRelay(ApiHandler& api, ApiCall& call, std::unique_ptr<serving::Admission::Slot> slot, bool stream)
      : api_(api), call_(call), slot_(std::move(slot)), stream_(stream) {}

  void open(Responder& res) {
    if (stream_) res.begin_stream({{"X-Request-Id", call_.id}});
  }

  bool on_event(serving::Event& ev, Responder& res) override {
    if (ev.kind == serving::EventKind::Token) {
      delivered_ += ev.tokens;
      if (!stream_) {
        content_ += ev.text;
      } else if (!ev.text.empty()) {
        res.write_chunk(sse({{"content", ev.text}, {"stop", false}, {"index", 0}}));
      }
      return true;
    }
    if (ev.kind == serving::EventKind::Error) {
      const int status = http_status_for(Status(ev.code, ev.message));
      if (!stream_) {
        api_.error(res, call_, status, ev.message);
        return false;
      }
      res.write_chunk(sse(error_body(status, ev.message)));
      res.end_stream();
      return false;
    }
    call_.completion_tokens = ev.completion_tokens;
    call_.finish_reason = ev.finish_reason;
    nlohmann::json last = {{"content", stream_ ? "" : content_},
                           {"stop", true},
                           {"index", 0},
                           {"model", call_.model->id},
                           {"tokens_predicted", ev.completion_tokens},
                           {"tokens_evaluated", ev.prompt_tokens},
                           {"tokens_cached", ev.cached_tokens},
                           {"stop_type", stop_type(ev.finish_reason)},
                           {"truncated", false}};
    if (!stream_) {
      api_.json(res, call_, 200, dump(last));
      return false;
    }
    res.write_chunk(sse(last));
    res.end_stream();
    return false;
  }

  void on_client_gone() override {
    call_.finish_reason = "client_disconnected";
    call_.completion_tokens = delivered_;
  }

 private:
  ApiHandler& api_;
  ApiCall& call_;
  std::unique_ptr<serving::Admission::Slot> slot_;  // counted against the key while the request runs
  const bool stream_;
  std::string content_;
  int delivered_ = 0;
};

}  // namespace

void InfillHandler::infill(const HttpRequest& req, Responder& res, ApiCall& call) {
  nlohmann::json body;
  GenerationCall g;
  ApiError e = parse_json_object(req.body(), body);
  if (e.ok()) e = parse_infill(body, parse_context(req, call), g);
  if (!e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  auto slot = std::make_unique<serving::Admission::Slot>(admission_, client_key(call));
  auto ch = submit_generation(res, call, *slot, g);
  if (!ch) return;
  auto relay = std::make_unique<InfillRelay>(*this, call, std::move(slot), g.stream);
  relay->open(res);
  res.relay(std::move(ch), std::move(relay));
}

}  // namespace stride::server
