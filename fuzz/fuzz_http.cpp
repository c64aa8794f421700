// The HTTP layer in process: one HttpServer on 127.0.0.1 (any free port) with
// a small echo handler; each input is written to a fresh loopback connection,
// the write side is half-closed and the response is read until the server
// closes. The server must neither crash nor hold a finished connection open.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "fuzz_support.h"
#include "server/http_server.h"

namespace {

using namespace stride;
using namespace std::chrono_literals;

// A finished connection that stays open this long counts as a hang.
constexpr int kHangMs = 10000;

void handle(const server::HttpRequest& req, server::Responder& res) {
  std::string body = std::string(req.method_string()) + " " + std::string(req.target()) + " " +
                     std::to_string(req.body().size()) + "\n";
  server::Headers extra;
  if (auto it = req.find("X-Echo"); it != req.end()) extra.emplace_back("X-Echo", std::string(it->value()));
  const int status = req.target() == "/missing" ? 404 : 200;
  res.send(status, "text/plain", std::move(body), extra);
}

// Owns the server for the whole run; on exit waits for connection threads so
// none outlives the handler.
struct ServerHolder {
  std::unique_ptr<server::HttpServer> server;
  ServerHolder() {
    server::HttpServerOptions opts;
    opts.host = "127.0.0.1";
    opts.port = 0;
    opts.max_body_bytes = 64 << 10;
    opts.idle_timeout_s = 5;
    server = std::make_unique<server::HttpServer>(opts, handle);
    if (Status st = server->start(); !st.ok()) {
      std::fprintf(stderr, "fuzz_http: cannot start the server: %s\n", st.message().c_str());
      std::abort();
    }
  }
  ~ServerHolder() {
    server->stop();
    for (int i = 0; i < 200 && server->open_connections() > 0; ++i) std::this_thread::sleep_for(10ms);
  }
  ServerHolder(const ServerHolder&) = delete;
  ServerHolder& operator=(const ServerHolder&) = delete;
};

ServerHolder& holder() {
  static ServerHolder h;
  return h;
}

// A connected socket with its own RAII close.
struct Socket {
  int fd = -1;
  explicit Socket(int f) : fd(f) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
};

bool wait_fd(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, (int)left.count()) > 0;
}

[[noreturn]] void hang(const char* what) {
  std::fprintf(stderr, "fuzz_http: the server %s within %d ms (%d connections open)\n", what, kHangMs,
               holder().server->open_connections());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int port = holder().server->port();
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMs);
  if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS || !wait_fd(s.fd, POLLOUT, deadline)) hang("did not accept a connection");
  }
  // Write and read together: a server may answer (and close) before the
  // request is complete, or stop reading a body it refused.
  size_t sent = 0;
  bool closed_write = false;
  char buf[16384];
  while (true) {
    if (sent == size && !closed_write) {
      ::shutdown(s.fd, SHUT_WR);
      closed_write = true;
    }
    const short events = POLLIN | (closed_write ? 0 : POLLOUT);
    if (!wait_fd(s.fd, events, deadline)) hang("did not close a finished connection");
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) break;  // the server closed: done
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // reset: also done
    if (!closed_write) {
      const ssize_t w = ::send(s.fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) sent += (size_t)w;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // the server closed early
    }
  }
  return 0;
}
