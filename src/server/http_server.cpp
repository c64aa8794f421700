#include "server/http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>

namespace stride::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

void Responder::send(int status, const std::string& content_type, std::string body, const Headers& extra) {
  status_ = status;
  http::response<http::string_body> res{static_cast<http::status>(status), version_};
  res.set(http::field::server, "stride");
  res.set(http::field::content_type, content_type);
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(keep_alive_);
  res.body() = std::move(body);
  res.prepare_payload();
  boost::system::error_code ec;
  http::write(stream_, res, ec);
  if (ec) failed_ = true;
}

bool Responder::begin_stream(const Headers& extra) {
  status_ = 200;
  http::response<http::empty_body> res{http::status::ok, version_};
  res.set(http::field::server, "stride");
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(keep_alive_);
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  boost::system::error_code ec;
  http::write_header(stream_, sr, ec);
  if (ec) failed_ = true;
  return !failed_;
}

bool Responder::write_chunk(const std::string& data) {
  if (failed_) return false;
  boost::system::error_code ec;
  asio::write(stream_, http::make_chunk(asio::buffer(data)), ec);
  if (ec) failed_ = true;
  return !failed_;
}

void Responder::end_stream() {
  if (failed_) return;
  boost::system::error_code ec;
  asio::write(stream_, http::make_chunk_last(), ec);
  if (ec) failed_ = true;
}

bool Responder::client_gone() {
  if (failed_) return true;
  const int fd = stream_.socket().native_handle();
  // The peer half-closed even if bytes are still unread (e.g. a TLS alert).
  pollfd p{fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) failed_ = true;
  if (failed_) return true;
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) failed_ = true;  // orderly shutdown by the peer
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) failed_ = true;
  return failed_;
}

HttpServer::HttpServer(HttpServerOptions opts, Handler handler)
    : opts_(std::move(opts)), handler_(std::move(handler)) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  if (!opts_.tls_cert_file.empty() || !opts_.tls_key_file.empty()) {
    STRIDE_ASSIGN_OR_RETURN(tls_, make_tls_context(opts_.tls_cert_file, opts_.tls_key_file));
  }
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(opts_.host, ec);
  if (ec) return InvalidArgument("bad host address '" + opts_.host + "': " + ec.message());
  acceptor_ = std::make_unique<tcp::acceptor>(io_);
  const tcp::endpoint ep(addr, (unsigned short)opts_.port);
  acceptor_->open(ep.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(ep, ec);
  if (!ec) acceptor_->listen(1024, ec);
  if (ec) return IoError("cannot listen on " + opts_.host + ":" + std::to_string(opts_.port) + ": " + ec.message());
  port_ = acceptor_->local_endpoint().port();
  accept_thread_ = std::thread([this] { accept_loop(); });
  return Status::Ok();
}

void HttpServer::stop() {
  stopping_ = true;
  if (accept_thread_.joinable()) accept_thread_.join();
  if (acceptor_) {
    boost::system::error_code ec;
    acceptor_->close(ec);
  }
}

void HttpServer::close_idle_connections() {
  std::lock_guard<std::mutex> lock(fds_mu_);
  for (int fd : fds_) ::shutdown(fd, SHUT_RD);  // blocked reads return; writes still go out
}

void HttpServer::accept_loop() {
  while (!stopping_) {
    pollfd p{acceptor_->native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    boost::system::error_code ec;
    tcp::socket socket(io_);
    acceptor_->accept(socket, ec);
    if (ec) continue;
    if (connections_.load() >= opts_.max_connections) {
      socket.close(ec);  // over the limit: the client retries
      continue;
    }
    ++connections_;
    std::thread([this, s = std::move(socket)]() mutable {
      serve(std::move(s));
      --connections_;
    }).detach();
  }
}

void HttpServer::serve(tcp::socket raw_socket) {
  boost::system::error_code ec;
  ConnectionStream stream(std::move(raw_socket), tls_.get());
  tcp::socket& socket = stream.socket();
  const int fd = socket.native_handle();
  {
    std::lock_guard<std::mutex> lock(fds_mu_);
    fds_.insert(fd);
  }
  socket.set_option(tcp::no_delay(true), ec);
  timeval tv{opts_.idle_timeout_s, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string ip = socket.remote_endpoint(ec).address().to_string();
  boost::beast::flat_buffer buffer;
  stream.handshake(ec);  // TLS only; a failed handshake (e.g. plain HTTP to an HTTPS port) closes the connection
  while (!ec && !stopping_) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(opts_.max_body_bytes);
    parser.header_limit(64 * 1024);
    http::read(stream, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      Responder r(stream, 11, false, ip);
      r.send(413, "application/json",
             R"({"error":{"message":"request body too large","type":"invalid_request_error","param":null,"code":"body_too_large"}})");
      // Read what the client is still sending (briefly) so closing does not
      // reset the connection before it has read the 413.
      stream.shutdown();
      timeval brief{1, 0};
      ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &brief, sizeof brief);
      char sink[16384];
      for (int64_t got = 0; got < (int64_t)64 << 20;) {
        const ssize_t n = ::recv(socket.native_handle(), sink, sizeof sink, 0);
        if (n <= 0) break;
        got += n;
      }
      break;
    }
    if (ec) {
      if (ec != http::error::end_of_stream && ec != asio::error::eof && ec != asio::error::connection_reset &&
          ec != asio::error::would_block && ec != asio::error::try_again) {
        Responder r(stream, 11, false, ip);
        r.send(400, "application/json",
               R"({"error":{"message":"malformed HTTP request","type":"invalid_request_error","param":null,"code":null}})");
      }
      break;
    }
    const HttpRequest& req = parser.get();
    const bool keep = req.keep_alive() && !stopping_;
    Responder r(stream, req.version(), keep, ip);
    handler_(req, r);
    if (!keep || r.failed()) break;
  }
  {
    std::lock_guard<std::mutex> lock(fds_mu_);
    fds_.erase(fd);
  }
  stream.shutdown();
  socket.close(ec);
}

}  // namespace stride::server
