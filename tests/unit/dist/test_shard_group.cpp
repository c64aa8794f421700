// The shard group's operations across 3 processes on loopback, through both
// rendezvous stores (a directory; Debian's redis-server on a free port):
// each rank contributes values known in advance, and every rank checks what
// arrives against the arithmetic (sums, maxima, rank order).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "dist/shard_group.h"
#include "rank_processes.h"

namespace stride::dist {
namespace {

using testing::RankReport;

constexpr int kWorld = 3;

// What rank r contributes: n values that differ by rank and index.
std::vector<float> contribution(int r, int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = (float)(r * 10 + i) * (i % 2 ? 1.f : -1.f);
  return x;
}

// Runs every operation once on rank r; a wrong value is a failed Status.
RankReport exercise(const std::string& rendezvous, int r) {
  ShardGroupOptions o;
  o.rank = r;
  o.world = kWorld;
  o.rendezvous = rendezvous;
  o.timeout = std::chrono::seconds(20);
  auto connected = ShardGroup::connect(o);
  if (!connected.ok()) return testing::failed(connected.status());
  ShardGroup& g = **connected;
  auto fail = [&](const std::string& what) { return testing::failed(Internal("rank " + std::to_string(r) + ": " + what)); };
  const int n = 5;

  std::vector<float> sum = contribution(r, n), max = contribution(r, n);
  if (Status s = g.allreduce_sum(sum.data(), n); !s.ok()) return testing::failed(s);
  if (Status s = g.allreduce_max(max.data(), n); !s.ok()) return testing::failed(s);
  for (int i = 0; i < n; ++i) {
    float want_sum = 0, want_max = -1e30f;
    for (int k = 0; k < kWorld; ++k) {
      want_sum += contribution(k, n)[i];
      want_max = std::max(want_max, contribution(k, n)[i]);
    }
    if (sum[i] != want_sum) return fail("allreduce sum");
    if (max[i] != want_max) return fail("allreduce max");
  }

  std::vector<float> b = r == 1 ? contribution(1, n) : std::vector<float>(n, 0.f);
  if (Status s = g.broadcast(b.data(), n * sizeof(float), 1); !s.ok()) return testing::failed(s);
  if (b != contribution(1, n)) return fail("broadcast");

  const std::vector<float> mine = contribution(r, n);
  std::vector<float> all(r == 0 ? (size_t)n * kWorld : 0);
  if (Status s = g.gather(mine.data(), n * sizeof(float), all.data(), 0); !s.ok()) return testing::failed(s);
  for (int k = 0; r == 0 && k < kWorld; ++k)
    if (std::vector<float>(all.begin() + k * n, all.begin() + (k + 1) * n) != contribution(k, n)) return fail("gather");

  // Two ring steps: after s steps a rank holds rank - s's values.
  std::vector<float> current = mine, next(n);
  for (int s = 1; s <= 2; ++s) {
    if (Status st = g.ring_pass_start(current.data(), next.data(), n * sizeof(float)); !st.ok()) return testing::failed(st);
    if (Status st = g.ring_pass_finish(); !st.ok()) return testing::failed(st);
    std::swap(current, next);
    if (current != contribution((r - s + kWorld) % kWorld, n)) return fail("ring pass " + std::to_string(s));
  }

  // Point to point: rank 2 to rank 0.
  if (r == 2)
    if (Status s = g.send(0, mine.data(), n * sizeof(float), 7); !s.ok()) return testing::failed(s);
  if (r == 0) {
    std::vector<float> got(n);
    if (Status s = g.recv(2, got.data(), n * sizeof(float), 7); !s.ok()) return testing::failed(s);
    if (got != contribution(2, n)) return fail("send/recv");
  }
  RankReport rep;
  rep.bytes_sent = g.payload_bytes_sent();
  return rep;
}

void expect_all_ok(const std::vector<testing::RankOutcome>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    EXPECT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
  }
}

TEST(ShardGroup, EveryOperationThroughAFileRendezvous) {
  const testing::RendezvousDir dir;
  expect_all_ok(testing::run_ranks(kWorld, [&](int r) { return exercise(dir.address(), r); },
                                   std::chrono::seconds(60)));
}

// Debian's redis-server on a free loopback port, stopped with the object.
class RedisServer {
 public:
  RedisServer() {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(s, (sockaddr*)&a, sizeof a) == 0 && getsockname(s, (sockaddr*)&a, &len) == 0) port_ = ntohs(a.sin_port);
    close(s);
    const std::string port = std::to_string(port_);
    pid_ = fork();
    if (pid_ == 0) {
      const int quiet = open("/dev/null", O_WRONLY);
      dup2(quiet, 1);
      dup2(quiet, 2);
      execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", (char*)nullptr);
      _exit(127);  // not installed: the test fails on connect
    }
  }
  ~RedisServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  // Until it accepts connections (or the time is up).
  bool ready() const {
    for (int i = 0; i < 200; ++i) {
      const int s = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port_);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const bool up = connect(s, (sockaddr*)&a, sizeof a) == 0;
      close(s);
      if (up) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  std::string address() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST(ShardGroup, EveryOperationThroughARedisRendezvous) {
  const RedisServer redis;
  ASSERT_TRUE(redis.ready()) << "redis-server (scripts/setup installs it) did not start";
  expect_all_ok(testing::run_ranks(kWorld, [&](int r) { return exercise(redis.address(), r); },
                                   std::chrono::seconds(60)));
}

}  // namespace
}  // namespace stride::dist
