#include "http/log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>

namespace stride::server {

namespace {
std::atomic<int> g_level{(int)LogLevel::Info};
std::mutex g_mu;
const char* name_of(LogLevel l) {
  switch (l) {
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO";
    case LogLevel::Warning: return "WARNING";
    case LogLevel::Error: return "ERROR";
  }
  return "INFO";
}
}  // namespace

void set_log_level(const std::string& n) {
  g_level = n == "DEBUG" ? 0 : n == "WARNING" ? 2 : n == "ERROR" ? 3 : 1;
}

void log(LogLevel level, const std::string& message, const std::vector<std::pair<std::string, std::string>>& fields) {
  if ((int)level < g_level.load()) return;
  nlohmann::json j;
  j["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  j["level"] = name_of(level);
  j["msg"] = message;
  for (const auto& [k, v] : fields) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (!v.empty() && end && *end == '\0' && d == (double)(int64_t)d) j[k] = (int64_t)d;
    else if (!v.empty() && end && *end == '\0') j[k] = d;
    else j[k] = v;
  }
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace stride::server
