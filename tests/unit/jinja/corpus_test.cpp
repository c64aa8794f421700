// The corpus test: every real chat template that llama.cpp tests with, rendered
// for several conversations, must match Jinja2 3.1.6 byte for byte (or fail
// where Jinja2 raised). Goldens: scripts/oracles/chat_template_goldens.py
// (run by scripts/setup); templates: scripts/oracles/fetch_chat_templates.
// Templates that are not claimed are listed, with the reason, in
// tests/unit/jinja/unclaimed_templates.txt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "jinja/template.h"
#include "goldens.h"

namespace stride::jinja {
namespace {

namespace fs = std::filesystem;

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

TEST(JinjaCorpus, ClaimedTemplatesRenderLikeJinja2) {
  const auto goldens = testing::load_goldens();
  if (!goldens || !fs::exists(templates_dir())) {
    FAIL() << "no goldens (" << testing::goldens_path() << ") or templates (" << templates_dir()
           << "): run scripts/setup";
  }
  const auto& doc = *goldens;
  const std::set<std::string> skip = unclaimed();
  RenderOptions options;
  options.now = testing::fixed_now();
  std::map<std::string, int> failures;  // template -> failing cases
  std::set<std::string> all;
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    const std::string name = c["template"].get<std::string>();
    all.insert(name);
    if (skip.count(name)) continue;
    const std::string source = testing::read_file(templates_dir() / name);
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
      const std::string error = c["error"].get<std::string>();
      EXPECT_FALSE(out.ok()) << where << ": Jinja2 raised " << error;
      // raise_exception(msg) must come back with the template's own message.
      const std::string raised = "TemplateError: ";
      const bool same_raise = out.ok() || error.rfind(raised, 0) != 0 || out.status().message() == error.substr(raised.size());
      EXPECT_TRUE(same_raise) << where << ": Jinja2 raised " << error << ", stride: " << out.status().to_string();
      if (out.ok() || !same_raise) ++failures[name];
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
