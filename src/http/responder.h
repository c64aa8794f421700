#pragma once
// What a request handler writes its response through. The handler runs on
// its own thread and blocks; the connection's I/O happens on the network
// threads, each write bounded by the write timeout.
#include <boost/beast/http.hpp>
#include <string>
#include <utility>
#include <vector>

namespace stride::server {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using Headers = std::vector<std::pair<std::string, std::string>>;

// One connection's side of a response; implemented by the HTTP session.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // Each returns false once the client is gone or a write timed out.
  virtual bool write_response(http::response<http::string_body>& res) = 0;
  virtual bool write_stream_header(http::response<http::empty_body>& res) = 0;
  virtual bool write_raw(const std::string& bytes, bool as_chunk) = 0;
  virtual bool write_last_chunk() = 0;
  // Non-blocking: true when the peer has gone (see Responder::client_gone).
  virtual bool peer_reset() = 0;
  virtual bool peer_half_closed() = 0;
};

class Responder {
 public:
  Responder(ResponseSink& sink, unsigned version, bool keep_alive, std::string client_ip)
      : sink_(sink), version_(version), keep_alive_(keep_alive), client_ip_(std::move(client_ip)) {}

  void send(int status, const std::string& content_type, std::string body, const Headers& extra = {});
  // Server-Sent Events over chunked transfer encoding.
  bool begin_stream(const Headers& extra = {});
  bool write_chunk(const std::string& data);  // false once the client is gone
  void end_stream();
  // True when the client has gone. A client that only half-closed (shut its
  // sending side and waits for the answer) is not gone: when its FIN arrives
  // the server sends a harmless probe (an interim "100 Continue", or an SSE
  // comment once streaming) that a fully closed socket answers with a reset.
  bool client_gone();

  const std::string& client_ip() const { return client_ip_; }
  int status() const { return status_; }
  bool started() const { return status_ != 0; }
  bool streaming() const { return streaming_; }
  bool failed() const { return failed_; }

 private:
  ResponseSink& sink_;
  unsigned version_;
  bool keep_alive_;
  std::string client_ip_;
  int status_ = 0;
  bool streaming_ = false;
  bool failed_ = false;
  bool probed_ = false;
};

}  // namespace stride::server
