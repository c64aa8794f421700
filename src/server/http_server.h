#pragma once
// HTTP/1.1 keep-alive server on Boost.Beast. Connections are served by a
// thread each (blocking reads and writes): a streaming response waits on its
// request's event queue, and a thread per connection keeps that simple. The
// acceptor's backlog is large (1024); max_connections bounds the threads.
// With a certificate and key the server speaks HTTPS only (OpenSSL).
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/connection_stream.h"

namespace stride::server {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Writes the response(s) of one connection.
class Responder {
 public:
  Responder(ConnectionStream& stream, unsigned version, bool keep_alive, std::string client_ip)
      : stream_(stream), version_(version), keep_alive_(keep_alive), client_ip_(std::move(client_ip)) {}

  void send(int status, const std::string& content_type, std::string body, const Headers& extra = {});
  // Server-Sent Events over chunked transfer encoding.
  bool begin_stream(const Headers& extra = {});
  bool write_chunk(const std::string& data);  // false once the client is gone
  void end_stream();
  // True when the peer closed its side (checked without blocking).
  bool client_gone();

  const std::string& client_ip() const { return client_ip_; }
  int status() const { return status_; }
  bool failed() const { return failed_; }

 private:
  ConnectionStream& stream_;
  unsigned version_;
  bool keep_alive_;
  std::string client_ip_;
  int status_ = 0;
  bool failed_ = false;
};

using Handler = std::function<void(const HttpRequest&, Responder&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;              // 0: any free port (see port())
  int64_t max_body_bytes = 1 << 20;
  int max_connections = 512;
  int idle_timeout_s = 60;
  std::string tls_cert_file;    // both set: HTTPS only
  std::string tls_key_file;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions opts, Handler handler);
  ~HttpServer();
  Status start();   // binds and starts the accept thread
  void stop();  // stops accepting; open connections finish their current request
  // Wakes connections waiting for their next request so they close (call
  // after the work in flight is done: a half-closed socket reads as a gone client).
  void close_idle_connections();
  int port() const { return port_; }
  int open_connections() const { return connections_.load(); }

 private:
  void accept_loop();
  void serve(boost::asio::ip::tcp::socket socket);

  HttpServerOptions opts_;
  Handler handler_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // null: plain HTTP
  std::thread accept_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::mutex fds_mu_;
  std::set<int> fds_;  // sockets of open connections
  int port_ = 0;
};

}  // namespace stride::server
