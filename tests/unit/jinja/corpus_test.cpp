// The corpus test: every real chat template that llama.cpp tests with, rendered
// for several conversations, must match Jinja2 3.1.6 byte for byte (or fail
// where Jinja2 raised). Goldens: scripts/oracles/chat_template_goldens.py
// (run by scripts/setup); templates: scripts/oracles/fetch_chat_templates.
// Templates that are not claimed are listed, with the reason, in
// tests/unit/jinja/unclaimed_templates.txt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "jinja/template.h"

namespace stride::jinja {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path templates_dir() {
  if (const char* d = std::getenv("STRIDE_CHAT_TEMPLATES")) return d;
  const char* cache = std::getenv("STRIDE_CACHE");
  if (cache) return fs::path(cache) / "chat-templates";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache/stride/chat-templates";
}

std::set<std::string> unclaimed() {
  std::set<std::string> out;
  std::ifstream f(fs::path(STRIDE_SOURCE_DIR) / "tests/unit/jinja/unclaimed_templates.txt");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.insert(line.substr(0, line.find_first_of(" \t")));
  }
  return out;
}

// The goldens' fixed clock: 2026-03-07 09:05:02.
std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 7;
  tm.tm_hour = 9;
  tm.tm_min = 5;
  tm.tm_sec = 2;
  std::time_t t = timegm(&tm);
  gmtime_r(&t, &tm);  // fills weekday and day of year
  return tm;
}

TEST(JinjaCorpus, ClaimedTemplatesRenderLikeJinja2) {
  const fs::path goldens = fs::path(STRIDE_SOURCE_DIR) / "tests/data/generated/chat_template_goldens.json";
  if (!fs::exists(goldens) || !fs::exists(templates_dir())) {
    GTEST_SKIP() << "no goldens (" << goldens << ") or templates (" << templates_dir()
                 << "): run scripts/setup";
  }
  const auto doc = nlohmann::ordered_json::parse(read_file(goldens));
  const std::set<std::string> skip = unclaimed();
  RenderOptions options;
  options.now = fixed_now();
  std::map<std::string, int> failures;  // template -> failing cases
  std::set<std::string> all;
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    const std::string name = c["template"].get<std::string>();
    all.insert(name);
    if (skip.count(name)) continue;
    const std::string source = read_file(templates_dir() / name);
    auto tmpl = Template::parse(source);
    const std::string where = name + " / " + c["conversation"].get<std::string>();
    ++checked;
    if (!tmpl.ok()) {
      EXPECT_TRUE(c.contains("error")) << where << ": " << tmpl.status().to_string();
      if (!c.contains("error")) ++failures[name];
      continue;
    }
    auto out = tmpl->render(context_from_json(c["context"]), options);
    if (c.contains("error")) {
      EXPECT_FALSE(out.ok()) << where << ": Jinja2 raised " << c["error"].get<std::string>();
      if (out.ok()) ++failures[name];
    } else if (!out.ok()) {
      ADD_FAILURE() << where << ": " << out.status().to_string();
      ++failures[name];
    } else {
      const std::string want = c["output"].get<std::string>();
      if (out->text != want) {
        size_t at = 0;
        while (at < want.size() && at < out->text.size() && want[at] == out->text[at]) ++at;
        const size_t from = at > 80 ? at - 80 : 0;
        const auto show = [](const std::string& s) { return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
        ADD_FAILURE() << where << ": differs at byte " << at << "\n  jinja2: " << show(want.substr(from, 160))
                      << "\n  stride: " << show(out->text.substr(from, 160));
        ++failures[name];
      }
    }
  }
  size_t claimed = 0;
  for (const std::string& n : all) claimed += !skip.count(n);
  std::cout << "[corpus] " << claimed - failures.size() << " of " << all.size()
            << " templates byte-identical on every conversation (" << checked << " cases checked, "
            << skip.size() << " not claimed)\n";
  for (const auto& [n, k] : failures) std::cout << "[corpus] diverges: " << n << " (" << k << " cases)\n";
}

}  // namespace
}  // namespace stride::jinja
