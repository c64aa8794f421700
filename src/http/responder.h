#pragma once
// What a request handler writes its response through. Nothing here does I/O:
// the bytes collect in the Responder and the connection's session writes them
// asynchronously (each write bounded by the write timeout) whenever the
// handler or its event relay hands control back, so a handler never blocks on
// a slow client.
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "http/event_relay.h"

namespace stride::server {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using Headers = std::vector<std::pair<std::string, std::string>>;

class Responder;

// Runs once a response is over, however it ended (metrics, the audit log).
class ResponseEpilogue {
 public:
  virtual ~ResponseEpilogue() = default;
  virtual void done(const Responder& res) = 0;
};

class Responder {
 public:
  Responder(unsigned version, bool keep_alive, std::string client_ip)
      : version_(version), keep_alive_(keep_alive), client_ip_(std::move(client_ip)) {}

  void send(int status, const std::string& content_type, std::string body, const Headers& extra = {});
  // Server-Sent Events over chunked transfer encoding.
  bool begin_stream(const Headers& extra = {});
  bool write_chunk(const std::string& data);  // false once the client is gone
  void end_stream();
  // The rest of the response follows `ch`'s events through `relay` (see event_relay.h).
  void relay(std::shared_ptr<serving::RequestChannel> ch, std::unique_ptr<EventRelay> relay);
  void set_epilogue(std::unique_ptr<ResponseEpilogue> epilogue) { epilogue_ = std::move(epilogue); }
  // True once the client has gone (a write failed or timed out, or it hung up).
  bool client_gone() const { return failed_; }

  const std::string& client_ip() const { return client_ip_; }
  bool keep_alive() const { return keep_alive_; }
  int status() const { return status_; }
  bool started() const { return status_ != 0; }
  bool streaming() const { return streaming_; }
  bool failed() const { return failed_; }

  // The session's side.
  std::string take_output() { return std::exchange(out_, {}); }
  void set_failed() { failed_ = true; }
  // A client that only half-closed (shut its sending side and waits for the
  // answer) is not gone: the session then sends a harmless probe (an interim
  // "100 Continue", or an SSE comment once streaming) that a fully closed
  // socket answers with a reset. Once per response.
  void probe();
  std::shared_ptr<serving::RequestChannel> take_channel() { return std::move(channel_); }
  std::unique_ptr<EventRelay> take_relay() { return std::move(relay_); }
  std::unique_ptr<ResponseEpilogue> take_epilogue() { return std::move(epilogue_); }

 private:
  unsigned version_;
  bool keep_alive_;
  std::string client_ip_;
  std::string out_;  // written by the session
  std::shared_ptr<serving::RequestChannel> channel_;
  std::unique_ptr<EventRelay> relay_;
  std::unique_ptr<ResponseEpilogue> epilogue_;
  int status_ = 0;
  bool streaming_ = false;
  bool failed_ = false;
  bool probed_ = false;
};

}  // namespace stride::server
