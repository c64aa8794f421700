#pragma once
// Runs the ranks of a shard group as real processes on loopback: each rank
// a child forked from the test, reporting its Status, its output floats, the
// payload it sent and its run time back through a pipe. The parent must not
// have started threads before it forks (it holds no ThreadPool here).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "dist/shard_group.h"

namespace stride::dist::testing {

struct RankReport {
  Status status;
  std::vector<float> out;
  int64_t bytes_sent = 0;
  double seconds = 0;
};

inline RankReport failed(Status status) {
  RankReport r;
  r.status = std::move(status);
  return r;
}

struct RankOutcome {
  bool reported = false;   // the child wrote its report and exited 0
  bool timed_out = false;  // still running at the deadline: killed
  int exit_status = 0;     // waitpid's status
  RankReport report;
};

namespace detail {

inline void put(std::string& buf, const void* p, size_t n) { buf.append((const char*)p, n); }

inline std::string encode(const RankReport& r) {
  std::string buf;
  const int32_t code = (int32_t)r.status.code();
  const uint64_t msg = r.status.message().size(), n = r.out.size();
  put(buf, &code, sizeof code);
  put(buf, &msg, sizeof msg);
  buf += r.status.message();
  put(buf, &n, sizeof n);
  put(buf, r.out.data(), n * sizeof(float));
  put(buf, &r.bytes_sent, sizeof r.bytes_sent);
  put(buf, &r.seconds, sizeof r.seconds);
  return buf;
}

inline bool decode(const std::string& buf, RankReport& r) {
  size_t at = 0;
  auto get = [&](void* p, size_t n) {
    if (at + n > buf.size()) return false;
    std::memcpy(p, buf.data() + at, n);
    at += n;
    return true;
  };
  int32_t code = 0;
  uint64_t msg = 0, n = 0;
  if (!get(&code, sizeof code) || !get(&msg, sizeof msg) || at + msg > buf.size()) return false;
  std::string text = buf.substr(at, msg);
  at += msg;
  r.status = code == 0 ? Status::Ok() : Status((StatusCode)code, text);
  if (!get(&n, sizeof n)) return false;
  r.out.resize(n);
  return get(r.out.data(), n * sizeof(float)) && get(&r.bytes_sent, sizeof r.bytes_sent) &&
         get(&r.seconds, sizeof r.seconds) && at == buf.size();
}

}  // namespace detail

// body(rank) runs in the child of each rank; a body may also end its process
// itself (_exit) to play a rank that dies. Children still running at the
// deadline are killed and reported as timed out.
inline std::vector<RankOutcome> run_ranks(int world, const std::function<RankReport(int rank)>& body,
                                          std::chrono::seconds deadline) {
  std::vector<pid_t> pids(world, -1);
  std::vector<int> fds(world, -1);
  for (int r = 0; r < world; ++r) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) break;
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipe_fds[0]);
      signal(SIGPIPE, SIG_IGN);  // as a shard group's process must (shard_group.h)
      const std::string buf = detail::encode(body(r));
      size_t done = 0;
      while (done < buf.size()) {
        const ssize_t n = write(pipe_fds[1], buf.data() + done, buf.size() - done);
        if (n <= 0) break;
        done += (size_t)n;
      }
      // A forked test child ends here, without running the parent's gtest teardown.
      _exit(done == buf.size() ? 0 : 1);
    }
    close(pipe_fds[1]);
    pids[r] = pid;
    fds[r] = pipe_fds[0];
  }
  std::vector<std::string> bufs(world);
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (int open = world; open > 0;) {
    std::vector<pollfd> polled;
    for (int r = 0; r < world; ++r)
      if (fds[r] >= 0) polled.push_back({fds[r], POLLIN, 0});
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0 || poll(polled.data(), polled.size(), (int)left.count()) <= 0) break;
    for (int r = 0; r < world; ++r) {
      if (fds[r] < 0) continue;
      pollfd probe{fds[r], POLLIN, 0};
      if (poll(&probe, 1, 0) <= 0) continue;
      char chunk[1 << 16];
      const ssize_t n = read(fds[r], chunk, sizeof chunk);
      if (n > 0) {
        bufs[r].append(chunk, (size_t)n);
      } else {
        close(fds[r]);
        fds[r] = -1;
        --open;
      }
    }
  }
  std::vector<RankOutcome> outcomes(world);
  for (int r = 0; r < world; ++r) {
    if (fds[r] >= 0) {
      close(fds[r]);
      outcomes[r].timed_out = true;
      if (pids[r] > 0) kill(pids[r], SIGKILL);
    }
    if (pids[r] > 0) waitpid(pids[r], &outcomes[r].exit_status, 0);
    outcomes[r].reported = !outcomes[r].timed_out && WIFEXITED(outcomes[r].exit_status) &&
                           WEXITSTATUS(outcomes[r].exit_status) == 0 && detail::decode(bufs[r], outcomes[r].report);
  }
  return outcomes;
}

// A fresh directory for a file rendezvous, removed with the object.
class RendezvousDir {
 public:
  RendezvousDir() {
    char tmpl[] = "/tmp/stride-shards-XXXXXX";
    if (mkdtemp(tmpl)) path_ = tmpl;
  }
  ~RendezvousDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string address() const { return "file:" + path_; }
  // Options of rank `rank` of a group that meets here.
  ShardGroupOptions options(int rank, int world, std::chrono::milliseconds timeout) const {
    ShardGroupOptions o;
    o.rank = rank;
    o.world = world;
    o.rendezvous = address();
    o.timeout = timeout;
    return o;
  }

 private:
  std::string path_;
};

}  // namespace stride::dist::testing
