// The HTTP server's request path without a model: handlers answer at once or
// hand a channel and an EventRelay over; events pushed from another thread
// (as the scheduler does) reach the client, a client that leaves cancels the
// request, and the in-flight cap and shutdown hold.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "http/http_server.h"

using namespace stride;
using namespace stride::server;
using namespace std::chrono_literals;

namespace {

// Writes each event's text as one SSE chunk; ends with the finish.
struct EchoRelay : EventRelay {
  std::atomic<bool>* gone;
  explicit EchoRelay(std::atomic<bool>* g) : gone(g) {}
  bool on_event(serving::Event& ev, Responder& res) override {
    if (ev.kind == serving::EventKind::Finish) {
      res.write_chunk("data: [" + ev.finish_reason + "]\n\n");
      res.end_stream();
      return false;
    }
    res.write_chunk("data: " + ev.text + "\n\n");
    return true;
  }
  void on_client_gone() override { *gone = true; }
};

struct Fixture {
  std::mutex mu;
  std::shared_ptr<serving::RequestChannel> channel;  // the last streamed request's
  std::atomic<bool> gone{false};

  void handle(const HttpRequest& req, Responder& res) {
    const std::string target(req.target());
    if (target == "/throw") throw std::runtime_error("boom");
    if (target == "/stream") {
      auto ch = std::make_shared<serving::RequestChannel>(serving::ServeRequest{});
      {
        std::lock_guard<std::mutex> lock(mu);
        channel = ch;
      }
      res.begin_stream();
      res.relay(ch, std::make_unique<EchoRelay>(&gone));
      return;
    }
    res.send(200, "text/plain", "hello " + target);
  }
  std::shared_ptr<serving::RequestChannel> wait_channel() {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (channel) return channel;
      }
      std::this_thread::sleep_for(10ms);
    }
    return nullptr;
  }
};

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, (sockaddr*)&a, sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void send_all(int fd, const std::string& s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), (ssize_t)s.size()); }

// Reads until `until` appears (or the peer closes / times out).
std::string read_until(int fd, const std::string& until) {
  std::string got;
  char buf[4096];
  while (got.find(until) == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, (size_t)n);
  }
  return got;
}

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

struct Server {
  Fixture fx;
  std::unique_ptr<HttpServer> http;
  explicit Server(int max_in_flight = 512) {
    HttpServerOptions o;
    o.port = 0;
    o.max_requests_in_flight = max_in_flight;
    http = std::make_unique<HttpServer>(o, [this](const HttpRequest& q, Responder& r) { fx.handle(q, r); });
    EXPECT_TRUE(http->start().ok());
  }
};

serving::Event token(const std::string& text) {
  serving::Event e;
  e.text = text;
  e.tokens = 1;
  return e;
}

serving::Event finish(const std::string& reason) {
  serving::Event e;
  e.kind = serving::EventKind::Finish;
  e.finish_reason = reason;
  return e;
}

}  // namespace

TEST(HttpServer, AnswersAndKeepsTheConnection) {
  Server s;
  const int fd = connect_to(s.http->port());
  ASSERT_GE(fd, 0);
  send_all(fd, get("/a"));
  EXPECT_NE(read_until(fd, "hello /a").find("HTTP/1.1 200 OK"), std::string::npos);
  send_all(fd, get("/b"));
  EXPECT_NE(read_until(fd, "hello /b").find("hello /b"), std::string::npos);
  ::close(fd);
}

TEST(HttpServer, StreamsEventsPushedFromAnotherThread) {
  Server s;
  const int fd = connect_to(s.http->port());
  ASSERT_GE(fd, 0);
  send_all(fd, get("/stream"));
  auto ch = s.fx.wait_channel();
  ASSERT_TRUE(ch);
  std::thread scheduler([&] {
    for (int i = 0; i < 200; ++i) {
      ch->push(token("t" + std::to_string(i)));
      if (i % 50 == 0) std::this_thread::sleep_for(2ms);
    }
    ch->push(finish("stop"));
  });
  const std::string got = read_until(fd, "0\r\n\r\n");
  scheduler.join();
  size_t at = 0;
  for (int i = 0; i < 200; ++i) {
    const size_t next = got.find("data: t" + std::to_string(i) + "\n\n", at);
    ASSERT_NE(next, std::string::npos) << i;
    at = next;
  }
  EXPECT_NE(got.find("data: [stop]\n\n", at), std::string::npos);
  // The connection serves the next request.
  send_all(fd, get("/after"));
  EXPECT_NE(read_until(fd, "hello /after").find("hello /after"), std::string::npos);
  ::close(fd);
  EXPECT_FALSE(ch->cancelled());
}

TEST(HttpServer, ClientThatLeavesCancelsTheRequest) {
  Server s;
  const int fd = connect_to(s.http->port());
  ASSERT_GE(fd, 0);
  send_all(fd, get("/stream"));
  auto ch = s.fx.wait_channel();
  ASSERT_TRUE(ch);
  ch->push(token("first"));
  read_until(fd, "data: first");
  EXPECT_FALSE(s.http->wait_handlers(50));
  ::close(fd);
  for (int i = 0; i < 300 && !ch->cancelled(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(ch->cancelled());
  EXPECT_TRUE(s.fx.gone.load());
  EXPECT_TRUE(s.http->wait_handlers(2000));
}

TEST(HttpServer, HandlerExceptionIs500) {
  Server s;
  const int fd = connect_to(s.http->port());
  ASSERT_GE(fd, 0);
  send_all(fd, get("/throw"));
  const std::string got = read_until(fd, "}");
  EXPECT_NE(got.find("HTTP/1.1 500"), std::string::npos);
  EXPECT_NE(got.find("internal error while handling the request"), std::string::npos);
  ::close(fd);
}

TEST(HttpServer, InFlightCapRefusesWith503) {
  Server s(/*max_in_flight=*/1);
  const int a = connect_to(s.http->port());
  ASSERT_GE(a, 0);
  send_all(a, get("/stream"));
  auto ch = s.fx.wait_channel();
  ASSERT_TRUE(ch);
  const int b = connect_to(s.http->port());
  ASSERT_GE(b, 0);
  send_all(b, get("/x"));
  const std::string got = read_until(b, "}");
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos);
  EXPECT_NE(got.find("the server is handling too many requests"), std::string::npos);
  ch->push(finish("stop"));
  read_until(a, "0\r\n\r\n");
  EXPECT_TRUE(s.http->wait_handlers(2000));
  ::close(a);
  ::close(b);
}

TEST(HttpServer, ShutdownWaitsForTheRequestInFlight) {
  Server s;
  const int fd = connect_to(s.http->port());
  ASSERT_GE(fd, 0);
  send_all(fd, get("/stream"));
  auto ch = s.fx.wait_channel();
  ASSERT_TRUE(ch);
  std::thread late([&] {
    std::this_thread::sleep_for(200ms);
    ch->push(token("last"));
    ch->push(finish("stop"));
  });
  s.http->stop();
  s.http->shutdown();
  late.join();
  const std::string got = read_until(fd, "0\r\n\r\n");
  EXPECT_NE(got.find("data: last"), std::string::npos);
  EXPECT_NE(got.find("data: [stop]"), std::string::npos);
  ::close(fd);
}
