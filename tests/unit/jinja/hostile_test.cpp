// Templates and contexts are untrusted: every abuse ends in a clean Status,
// never a crash, a hang or an exception.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "jinja/template.h"

namespace stride::jinja {
namespace {

Status render_status(const std::string& source, const RenderOptions& options = {}) {
  auto t = Template::parse(source);
  if (!t.ok()) return t.status();
  auto r = t->render(context_from_json(nlohmann::json::object()), options);
  return r.ok() ? Status::Ok() : r.status();
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JinjaHostile, UnterminatedTagsAreSyntaxErrors) {
  for (const char* src : {"{{ x", "{% if x %}open", "{% for x in y %}", "{# comment", "{{ 'abc }}", "{% if %}",
                          "{{ (1 + }}", "{% endif %}", "{% set %}", "{{ x | }}", "{% macro m( %}", "{{ [1, 2 }}",
                          "{% unknown_tag %}", "{{ } }}", "{{ 1 $ 2 }}", "{% for %}{% endfor %}"}) {
    Status s = render_status(src);
    EXPECT_FALSE(s.ok()) << src;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << src << ": " << s.to_string();
  }
  EXPECT_NE(render_status("{% if x %}\n\n{{ y").message().find("line 3"), std::string::npos);
}

TEST(JinjaHostile, DeepNestingIsRefused) {
  EXPECT_EQ(render_status(repeat("{% if true %}", 100000)).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ " + repeat("[", 100000) + " }}").code(), StatusCode::kInvalidArgument);  // unbalanced
  EXPECT_EQ(render_status("{{ " + repeat("not ", 100000) + "x }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ " + repeat("-", 100000) + "1 }}").code(), StatusCode::kResourceExhausted);
  // Long left-leaning chains, which do not recurse while parsing.
  EXPECT_EQ(render_status("{{ 1" + repeat(" + 1", 100000) + " }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ 'x'" + repeat(" | trim", 100000) + " }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ x" + repeat(".a", 100000) + " }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ f" + repeat("()", 100000) + " }}").code(), StatusCode::kResourceExhausted);
  // Within the bounds it still works.
  EXPECT_TRUE(render_status(repeat("{% if true %}", 50) + "x" + repeat("{% endif %}", 50)).ok());
  EXPECT_TRUE(render_status("{{ 1" + repeat(" + 1", 200) + " }}").ok());
}

TEST(JinjaHostile, RecursionIsBounded) {
  Status s = render_status("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  s = render_status("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  // The deepest stack a template can ask for: nested blocks inside a recursive macro.
  s = render_status("{% macro f(k) %}" + repeat("{% if true %}", 110) + "{{ f(k + 1) }}" + repeat("{% endif %}", 110) +
                    "{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
}

TEST(JinjaHostile, HugeLoopsAndOutputsStop) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render_status("{% for i in range(1000000000000) %}x{% endfor %}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}"
                          "{% endfor %}{% endfor %}{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ 'x' * 1000000000000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ 'x' * 100000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ [1] * 100000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                          "{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  // Many moderately large strings: the cumulative budget stops them.
  EXPECT_EQ(render_status("{% for i in range(1000000) %}{% set s = 'y' * 4000000 %}{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));

  RenderOptions small;
  small.max_output_bytes = 100;
  EXPECT_EQ(render_status(repeat("0123456789", 11), small).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(render_status(repeat("0123456789", 10), small).ok());
  small.max_iterations = 10;
  EXPECT_EQ(render_status("{% for i in range(11) %}{% endfor %}", small).code(), StatusCode::kResourceExhausted);
}

TEST(JinjaHostile, RuntimeErrorsAreStatuses) {
  for (const char* src : {"{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 1 % 0 }}", "{{ none.x.y }}", "{{ x.y }}", "{{ x() }}",
                          "{{ 1 < 'a' }}", "{{ [1] | tojson(indent=x.y) }}", "{{ range(1, 2, 0) }}",
                          "{{ 9223372036854775807 + 1 }}", "{{ 'a'.nosuch() }}", "{{ {}.pop('a') }}",
                          "{% for a, b in [1, 2] %}{% endfor %}", "{{ 1 | nosuchfilter }}", "{{ 1 is nosuchtest }}",
                          "{{ raise_exception('stop') }}", "{% break %}", "{{ (1).x.y }}", "{{ 'a' + none }}"}) {
    Status s = render_status(src);
    EXPECT_FALSE(s.ok()) << src;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << src << ": " << s.to_string();
  }
  EXPECT_EQ(render_status("{{ raise_exception('Only user and assistant roles are supported!') }}").message(),
            "Only user and assistant roles are supported!");
}

TEST(JinjaHostile, HostileContextIsData) {
  // Client text that looks like template syntax is never interpreted.
  nlohmann::json ctx = {{"messages", {{{"role", "user"}, {"content", "{{ 7 * 7 }}{% for %}"}}}}};
  auto t = Template::parse("{{ messages[0].content }}");
  ASSERT_TRUE(t.ok());
  auto r = t->render(context_from_json(ctx));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "{{ 7 * 7 }}{% for %}");
  // A context nested deeper than the bound is refused as a whole (an empty context).
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 2000; ++i) deep = nlohmann::json::array({deep});
  auto r2 = Template::parse("{{ messages is defined }}")->render(context_from_json(nlohmann::json{{"messages", deep}}));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->text, "False");
}

}  // namespace
}  // namespace stride::jinja
