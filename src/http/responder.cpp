#include "http/responder.h"

#include <boost/beast/core/buffers_range.hpp>
#include <cstdio>

namespace stride::server {

namespace {

// The bytes Beast's serializer would write for `res` (its header only when
// `header_only`), appended to `out`.
template <class Body>
void append_serialized(std::string& out, http::response<Body>& res, bool header_only) {
  http::response_serializer<Body> sr{res};
  sr.split(header_only);
  boost::system::error_code ec;
  while (!ec && !(header_only ? sr.is_header_done() : sr.is_done())) {
    sr.next(ec, [&](boost::system::error_code&, const auto& buffers) {
      std::size_t n = 0;
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        out.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      sr.consume(n);
    });
  }
}

// One chunk of a chunked body, framed as http::make_chunk frames it.
void append_chunk(std::string& out, const std::string& data) {
  char size[20];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out += size;
  out += data;
  out += "\r\n";
}

}  // namespace

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
  if (!failed_) append_serialized(out_, res, /*header_only=*/false);
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
  if (!failed_) append_serialized(out_, res, /*header_only=*/true);
  return !failed_;
}

bool Responder::write_chunk(const std::string& data) {
  if (failed_ || !streaming_) return false;
  if (!data.empty()) append_chunk(out_, data);
  return true;
}

void Responder::end_stream() {
  if (failed_ || !streaming_) return;
  out_ += "0\r\n\r\n";
}

void Responder::relay(std::shared_ptr<serving::RequestChannel> ch, std::unique_ptr<EventRelay> relay) {
  channel_ = std::move(ch);
  relay_ = std::move(relay);
}

void Responder::probe() {
  if (failed_ || probed_) return;
  probed_ = true;
  // HTTP/1.0 clients cannot take an interim response: a half-close there is
  // taken at its word and the request runs to the end.
  if (streaming_) append_chunk(out_, ": probe\n\n");
  else if (!started() && version_ >= 11) out_ += "HTTP/1.1 100 Continue\r\n\r\n";
}

}  // namespace stride::server
