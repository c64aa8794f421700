#pragma once
// Shared by the Jinja tests that compare with Jinja2's output
// (tests/data/generated/chat_template_goldens.json, written by
// scripts/oracles/chat_template_goldens.py).
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace stride::jinja::testing {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::filesystem::path goldens_path() {
  return std::filesystem::path(STRIDE_SOURCE_DIR) / "tests/data/generated/chat_template_goldens.json";
}

inline std::optional<nlohmann::ordered_json> load_goldens() {
  if (!std::filesystem::exists(goldens_path())) return std::nullopt;
  return nlohmann::ordered_json::parse(read_file(goldens_path()));
}

// The goldens' fixed clock for strftime_now: 2026-03-07 09:05:02.
inline std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 7;
  tm.tm_hour = 9;
  tm.tm_min = 5;
  tm.tm_sec = 2;
  std::time_t t = timegm(&tm);
  gmtime_r(&t, &tm);  // fills the weekday and the day of the year
  return tm;
}

}  // namespace stride::jinja::testing
