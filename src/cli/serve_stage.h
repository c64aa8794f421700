#pragma once
// `stride serve` start-up stages: each is timed and logged when done, so the
// log shows where start-up time goes (config, sha256, weights, warm-up).
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "http/log.h"

namespace stride::cli {

// Times one start-up stage and logs it.
class Stage {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Stage(std::string name) : name_(std::move(name)), t0_(Clock::now()) {}
  void done(std::vector<std::pair<std::string, std::string>> fields = {}) {
    fields.insert(fields.begin(), {"stage", name_});
    fields.push_back({"seconds", std::to_string(std::chrono::duration<double>(Clock::now() - t0_).count())});
    server::log(server::LogLevel::Info, "start-up stage done", fields);
  }

 private:
  std::string name_;
  Clock::time_point t0_;
};

}  // namespace stride::cli
