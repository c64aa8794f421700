#pragma once
// One connection: reads requests with deadlines, answers each (http/reply.h)
// and then reads the next one (keep-alive). Plain TCP or TLS.
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/ssl.hpp>
#include <cstdint>
#include <string>

#include "http/http_server.h"
#include "http/in_flight.h"

namespace stride::server {

// What every session of one server shares; owned by HttpServer.
struct SessionContext {
  const HttpServerOptions& opts;
  const Handler& handler;
  ConnectionRegistry& registry;
  InFlight& in_flight;
  boost::asio::thread_pool& workers;  // where handlers run (http/reply.h)
  const std::atomic<bool>& stopping;
};

// `tls` null: plain HTTP. The session owns itself from here on (it lives
// while an operation of it is pending) and unregisters `id` when it ends.
void start_session(boost::asio::ip::tcp::socket socket, uint64_t id, std::string ip,
                   boost::asio::ssl::context* tls, SessionContext& ctx);

}  // namespace stride::server
