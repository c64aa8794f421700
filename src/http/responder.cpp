#include "http/responder.h"

namespace stride::server {

void Responder::send(int status, const std::string& content_type, std::string body, const Headers& extra) {
  if (started()) return;  // one response per request
  status_ = status;
  http::response<http::string_body> res{static_cast<http::status>(status), version_};
  res.set(http::field::server, "stride");
  res.set(http::field::content_type, content_type);
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(keep_alive_);
  res.body() = std::move(body);
  res.prepare_payload();
  if (!sink_.write_response(res)) failed_ = true;
}

bool Responder::begin_stream(const Headers& extra) {
  if (started()) return false;
  status_ = 200;
  streaming_ = true;
  http::response<http::empty_body> res{http::status::ok, version_};
  res.set(http::field::server, "stride");
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(keep_alive_);
  res.chunked(true);
  if (!sink_.write_stream_header(res)) failed_ = true;
  return !failed_;
}

bool Responder::write_chunk(const std::string& data) {
  if (failed_ || !streaming_) return false;
  if (!data.empty() && !sink_.write_raw(data, /*as_chunk=*/true)) failed_ = true;
  return !failed_;
}

void Responder::end_stream() {
  if (failed_ || !streaming_) return;
  if (!sink_.write_last_chunk()) failed_ = true;
}

bool Responder::client_gone() {
  if (failed_) return true;
  if (sink_.peer_reset()) {
    failed_ = true;
    return true;
  }
  if (!probed_ && sink_.peer_half_closed()) {
    probed_ = true;
    // HTTP/1.0 clients cannot take an interim response: a half-close there is
    // taken at its word and the request runs to the end.
    bool ok = true;
    if (streaming_) ok = sink_.write_raw(": probe\n\n", /*as_chunk=*/true);
    else if (!started() && version_ >= 11) ok = sink_.write_raw("HTTP/1.1 100 Continue\r\n\r\n", /*as_chunk=*/false);
    if (!ok) failed_ = true;
  }
  return failed_;
}

}  // namespace stride::server
