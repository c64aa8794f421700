#include "http/generation_relay.h"

namespace stride::server {

void GenerationRelay::open(Responder& res) {
  if (!streaming_) return;
  res.begin_stream({{"X-Request-Id", call_.id}});
  write_head(res);
}

bool GenerationRelay::on_event(serving::Event& ev, Responder& res) {
  if (ev.kind == serving::EventKind::Token) {
    on_token(ev, res);
    return true;
  }
  if (ev.kind == serving::EventKind::Error) {
    const int status = http_status_for(Status(ev.code, ev.message));
    if (!streaming_) {
      api_.error(res, call_, status, ev.message);
      return false;
    }
    write_stream_error(status, ev.message, res);
    res.end_stream();
    return false;
  }
  call_.completion_tokens = ev.completion_tokens;
  call_.finish_reason = ev.finish_reason;
  return !write_finish(ev, res);
}

void GenerationRelay::on_client_gone() {
  call_.finish_reason = "client_disconnected";
  call_.completion_tokens = delivered_tokens_;
}

}  // namespace stride::server
