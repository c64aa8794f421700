// The HTTP layer in process: one HttpServer on 127.0.0.1 (any free port) with
// a small echo handler; each input is written to a fresh loopback connection,
// the write side is half-closed and the response is read until the server
// closes. The server must neither crash nor hold a finished connection open.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <memory>
#include <thread>

#include "fuzz_support.h"
#include "http/http_server.h"

namespace {

using namespace stride;
using namespace std::chrono_literals;

// A finished connection that stays open this long, twice over, counts as a hang.
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



// What the client saw last, printed with a hang.
struct ClientTrace {
  int fd = -1;
  size_t sent = 0, size = 0;
  long loops = 0, last_recv = 0, last_send = 0;
  int recv_errno = 0, send_errno = 0;
  short revents = 0;
  bool closed_write = false;
  unsigned long inode = 0;  // of the socket created for this input
  int extra_windows = 0;    // deadlines that passed and were given a second window
};

unsigned long inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}
ClientTrace g_trace;

[[noreturn]] void hang(const char* what) {
  std::fprintf(stderr, "fuzz_http: the server %s within %d ms (%d connections open)\n", what, kHangMs,
               holder().server->open_connections());
  const ClientTrace& t = g_trace;
  tcp_info info{};
  socklen_t len = sizeof info;
  int so_error = 0;
  socklen_t elen = sizeof so_error;
  ::getsockopt(t.fd, IPPROTO_TCP, TCP_INFO, &info, &len);
  ::getsockopt(t.fd, SOL_SOCKET, SO_ERROR, &so_error, &elen);
  sockaddr_in local{};
  socklen_t llen = sizeof local;
  ::getsockname(t.fd, reinterpret_cast<sockaddr*>(&local), &llen);
  std::fprintf(stderr,
               "fuzz_http: client port %d tcp_state %d so_error %d sent %zu/%zu closed_write %d loops %ld "
               "revents 0x%x recv %ld (errno %d) send %ld (errno %d)\n",
               ntohs(local.sin_port), (int)info.tcpi_state, so_error, t.sent, t.size, (int)t.closed_write, t.loops,
               (unsigned)t.revents, t.last_recv, t.recv_errno, t.last_send, t.send_errno);
  std::fprintf(stderr, "fuzz_http: fd %d inode at creation %lu, now %lu; second windows %d\n", t.fd, t.inode,
               inode_of(t.fd), t.extra_windows);
  // STRIDE_FUZZ_HANG_WAIT=S: stay alive S seconds so a debugger can attach.
  std::fprintf(stderr, "fuzz_http: tcp_info retransmits %u backoff %u unacked %u lost %u rto_us %u last_data_recv_ms %u "
               "last_ack_recv_ms %u snd_cwnd %u\n",
               (unsigned)info.tcpi_retransmits, (unsigned)info.tcpi_backoff, info.tcpi_unacked, info.tcpi_lost,
               info.tcpi_rto, info.tcpi_last_data_recv, info.tcpi_last_ack_recv, info.tcpi_snd_cwnd);
  if (std::getenv("STRIDE_FUZZ_HANG_SS")) {
    const std::string cmd = "ss -tanoie | grep -A1 ':" + std::to_string(ntohs(local.sin_port)) + " ' >&2";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "fuzz_http: no socket of that port in ss\n");
  }
  if (const char* wait = std::getenv("STRIDE_FUZZ_HANG_WAIT")) {
    std::fprintf(stderr, "fuzz_http: pid %d waits %s s\n", (int)::getpid(), wait);
    std::this_thread::sleep_for(std::chrono::seconds(std::atoi(wait)));
  }
  std::abort();
}

// Waits for `events` until `deadline`. A deadline that passes is given one
// more window of kHangMs: the 2-core guests this runs on have been seen to
// freeze for over 10 s (a loopback FIN left unacknowledged with no
// retransmission timer firing), and a real hang outlasts both windows.
bool wait_fd(int fd, short events, std::chrono::steady_clock::time_point& deadline) {
  for (int window = 0; window < 2; ++window) {
    if (window == 1) {
      deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMs);
      ++g_trace.extra_windows;
    }
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd, events, 0};
      const int n = ::poll(&p, 1, (int)left.count());
      g_trace.revents = p.revents;
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
    pollfd p{fd, events, 0};  // one last look: the timeout may have raced the event
    if (::poll(&p, 1, 0) > 0) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int port = holder().server->port();
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd < 0) return 0;
  g_trace = ClientTrace{};
  g_trace.fd = s.fd;
  g_trace.inode = inode_of(s.fd);
  g_trace.size = size;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMs);
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
      closed_write = g_trace.closed_write = true;
    }
    const short events = POLLIN | (closed_write ? 0 : POLLOUT);
    if (!wait_fd(s.fd, events, deadline)) hang("did not close a finished connection");
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, MSG_DONTWAIT);
    ++g_trace.loops;
    g_trace.last_recv = (long)n;
    g_trace.recv_errno = n < 0 ? errno : 0;
    if (n == 0) break;  // the server closed: done
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // reset: also done
    if (!closed_write) {
      const ssize_t w = ::send(s.fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) sent += (size_t)w;
      g_trace.last_send = (long)w;
      g_trace.send_errno = w < 0 ? errno : 0;
      g_trace.sent = sent;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // the server closed early
    }
  }
  if (g_trace.extra_windows > 0) {
    std::fprintf(stderr, "fuzz_http: finished only in a second %d ms window (a host stall, or a slow server)\n",
                 kHangMs);
  }
  return 0;
}
