#pragma once
// HTTP/1.1 keep-alive server on Boost.Beast's asynchronous model. A few
// network threads do all socket I/O; every read and write has a deadline
// (header, body, idle keep-alive, write), so slow senders, idle connections
// and clients that stop reading are cut off and cost no thread. A complete
// request runs its handler on a small worker pool (parsing and validation
// may take a while); the response is then written, and a streamed one fed
// with the scheduler's events, on the connection's strand (http/reply.h), so
// no thread waits on the scheduler.
// With a certificate and key the server speaks HTTPS only (OpenSSL).
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "http/connection_registry.h"
#include "http/in_flight.h"
#include "http/responder.h"

namespace stride::server {

struct SessionContext;
using Handler = std::function<void(const HttpRequest&, Responder&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;              // 0: any free port (see port())
  int64_t max_body_bytes = 1 << 20;
  int64_t max_header_bytes = 64 * 1024;
  int max_connections = 1024;
  int max_connections_per_ip = 256;
  int max_requests_in_flight = 512;  // requests being handled at once; beyond: 503
  int io_threads = 2;
  int handler_threads = 4;  // run handlers up to submission (http/reply.h)
  double header_timeout_s = 30;
  double body_timeout_s = 60;
  double idle_timeout_s = 60;
  double write_timeout_s = 30;
  int keepalive_max_requests = 1000;
  std::string tls_cert_file;    // both set: HTTPS only
  std::string tls_key_file;
  // Decides at accept, before any byte is read, whether an address may connect.
  std::function<bool(const std::string& ip)> accept_filter;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions opts, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status start();  // binds, listens and starts the network threads
  void stop();     // stops accepting; open connections finish their current request
  // Closes connections that wait for a request (after the work in flight is done).
  void close_idle_connections();
  // Waits for the requests in flight to be answered; false if some still run after `timeout_ms`.
  bool wait_handlers(int timeout_ms) { return in_flight_.wait_idle(timeout_ms); }
  // Waits for the requests in flight, closes everything and joins every
  // thread (called by the destructor).
  void shutdown();
  int port() const { return port_; }
  int open_connections() const { return registry_.size(); }
  int evicted_connections() const { return registry_.evicted(); }

 private:
  void do_accept();
  void on_accept(boost::asio::ip::tcp::socket socket);

  HttpServerOptions opts_;
  Handler handler_;
  ConnectionRegistry registry_;   // before io_: sessions destroyed with io_ unregister here
  InFlight in_flight_;
  std::atomic<bool> stopping_{false};
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // null: plain HTTP
  std::unique_ptr<SessionContext> session_ctx_;  // what every session shares
  std::vector<std::thread> io_threads_;
  // After io_: destroyed first, so no handler outlives the sessions' executor.
  std::optional<boost::asio::thread_pool> workers_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace stride::server
