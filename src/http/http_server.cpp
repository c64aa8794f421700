#include "http/http_server.h"

#include <boost/asio/strand.hpp>

#include "http/http_session.h"
#include "http/log.h"
#include "http/tls_context.h"

namespace stride::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpServer::HttpServer(HttpServerOptions opts, Handler handler)
    : opts_(std::move(opts)),
      handler_(std::move(handler)),
      registry_(opts_.max_connections, opts_.max_connections_per_ip),
      in_flight_(opts_.max_requests_in_flight) {}

HttpServer::~HttpServer() { shutdown(); }

Status HttpServer::start() {
  if (!opts_.tls_cert_file.empty() || !opts_.tls_key_file.empty()) {
    STRIDE_ASSIGN_OR_RETURN(tls_, make_tls_context(opts_.tls_cert_file, opts_.tls_key_file));
  }
  boost::system::error_code ec;
  const auto addr = net::ip::make_address(opts_.host, ec);
  if (ec) return InvalidArgument("bad host address '" + opts_.host + "': " + ec.message());
  acceptor_ = std::make_unique<tcp::acceptor>(io_);
  const tcp::endpoint ep(addr, (unsigned short)opts_.port);
  acceptor_->open(ep.protocol(), ec);
  if (!ec) acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(ep, ec);
  if (!ec) acceptor_->listen(4096, ec);
  if (ec) return IoError("cannot listen on " + opts_.host + ":" + std::to_string(opts_.port) + ": " + ec.message());
  port_ = acceptor_->local_endpoint().port();
  workers_.emplace((std::size_t)std::max(1, opts_.handler_threads));
  session_ctx_ = std::make_unique<SessionContext>(SessionContext{opts_, handler_, registry_, in_flight_, *workers_, stopping_});
  work_.emplace(io_.get_executor());
  do_accept();
  for (int i = 0; i < std::max(1, opts_.io_threads); ++i) {
    io_threads_.emplace_back([this] {
      for (;;) {
        try {
          io_.run();
          return;
        } catch (const std::exception& e) {
          // A handler threw: log it and keep serving the other connections.
          log(LogLevel::Error, "network thread caught an exception", {{"error", e.what()}});
        }
      }
    });
  }
  return Status::Ok();
}

void HttpServer::do_accept() {
  acceptor_->async_accept(net::make_strand(io_), [this](boost::system::error_code ec, tcp::socket socket) {
    if (stopping_.load() || !acceptor_->is_open()) return;
    if (!ec) on_accept(std::move(socket));
    else if (ec == net::error::no_descriptors) log(LogLevel::Warning, "accept: out of file descriptors");
    do_accept();
  });
}

void HttpServer::on_accept(tcp::socket socket) {
  boost::system::error_code ec;
  const std::string ip = socket.remote_endpoint(ec).address().to_string();
  if (ec) return;
  // The allowlist applies before any byte is read.
  if (opts_.accept_filter && !opts_.accept_filter(ip)) {
    socket.close(ec);
    return;
  }
  const uint64_t id = registry_.admit(ip);
  if (id == 0) {
    socket.close(ec);  // every connection is busy with a request: the client retries
    return;
  }
  start_session(std::move(socket), id, ip, tls_.get(), *session_ctx_);
}

void HttpServer::stop() {
  if (stopping_.exchange(true)) return;
  net::post(io_, [this] {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
  });
}

void HttpServer::close_idle_connections() { registry_.close_idle(); }

void HttpServer::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  stop();
  registry_.close_idle();
  in_flight_.wait_idle(-1);   // requests finish their responses on the network threads
  if (workers_) workers_->join();
  registry_.close_idle();     // connections that went back to waiting meanwhile
  work_.reset();
  // Give sessions a moment to finish closing, then stop whatever is left.
  for (int i = 0; i < 100 && registry_.size() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  io_.stop();
  for (auto& t : io_threads_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace stride::server
