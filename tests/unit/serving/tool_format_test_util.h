#pragma once
// What the tool-format tests share: two tools, the corpus of real chat
// templates (~/.cache/stride/chat-templates, filled by scripts/setup), and
// random edits of a reply for the readers' robustness tests.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "serving/tool_calls.h"

namespace stride::serving::testing {

inline const ToolSpec kWeather{"get_weather", "Weather in a city.",
                               R"({"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"], "additionalProperties": false})"};
inline const ToolSpec kTime{"get_time", "",
                            R"({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]})"};

// A template of the corpus ("" when it is missing).
inline std::string template_text(const std::string& name) {
  const char* home = std::getenv("HOME");
  std::ifstream f(std::filesystem::path(home ? home : "/root") / ".cache/stride/chat-templates" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// 1 to 4 random byte edits (replace, erase a run, insert one of `inserts`),
// then a random cut.
inline std::string mangle(std::string text, std::mt19937& rng, const char* inserts = "{}[]\"<>/\\ \n") {
  const size_t n_inserts = std::char_traits<char>::length(inserts);
  for (int e = 0, edits = 1 + (int)(rng() % 4); e < edits && !text.empty(); ++e) {
    const size_t at = rng() % text.size();
    switch (rng() % 3) {
      case 0: text[at] = static_cast<char>(rng() % 256); break;
      case 1: text.erase(at, 1 + rng() % 8); break;
      default: text.insert(at, 1, inserts[rng() % n_inserts]); break;
    }
  }
  text.resize(rng() % (text.size() + 1));
  return text;
}

}  // namespace stride::serving::testing
