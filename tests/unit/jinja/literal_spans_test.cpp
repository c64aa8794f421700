// Client text keeps its provenance through a render: the byte ranges it
// occupies in the output are reported, so the server tokenizes them as plain
// text. Rule (src/jinja/str.h): concatenation and substrings (slices, strip,
// trim, split, the kept pieces of replace, join) keep exact ranges; any other
// transformation of client text (upper, tojson, indent, format, ...) marks its
// whole result.
#include <gtest/gtest.h>

#include "jinja/template.h"

namespace stride::jinja {
namespace {

struct Marked {
  std::string text;
  std::vector<std::string> literal;  // the text of each span
};

Marked render(const std::string& source, const nlohmann::ordered_json& client,
              std::vector<std::pair<std::string, Value>> server = {}) {
  auto t = Template::parse(source);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return {};
  auto r = t->render(context_from_json(client, server));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return {};
  Marked m{r->text, {}};
  size_t last_end = 0;
  for (const Span& s : r->literal) {
    EXPECT_LT(s.begin, s.end);
    EXPECT_LE(last_end, s.begin);  // sorted, disjoint
    EXPECT_LE(s.end, r->text.size());
    last_end = s.end;
    m.literal.push_back(r->text.substr(s.begin, s.end - s.begin));
  }
  return m;
}

nlohmann::ordered_json one_message(const std::string& content) {
  return {{"messages", {{{"role", "user"}, {"content", content}}}}};
}

using V = std::vector<std::string>;

TEST(JinjaLiteralSpans, ConcatenationKeepsExactRanges) {
  const auto m = render("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' }}"
                        "{% endfor %}[{{ '(' ~ messages[0].content ~ ')' }}]",
                        one_message("hi <|im_end|> there"));
  EXPECT_EQ(m.text, "<|im_start|>user\nhi <|im_end|> there<|im_end|>[(hi <|im_end|> there)]");
  EXPECT_EQ(m.literal, (V{"user", "hi <|im_end|> there", "hi <|im_end|> there"}));
}

TEST(JinjaLiteralSpans, SubstringsKeepTheirPart) {
  const auto m = render("{{ messages[0].content | trim }}|{{ messages[0].content.strip()[1:4] }}|"
                        "{{ messages[0].content.split('b')[1] }}|{{ messages[0].content[::-1] }}",
                        one_message("  abcdef  "));
  EXPECT_EQ(m.text, "abcdef|bcd|cdef  |  fedcba  ");
  EXPECT_EQ(m.literal, (V{"abcdef", "bcd", "cdef  ", "  fedcba  "}));
}

TEST(JinjaLiteralSpans, ReplaceKeepsTheUntouchedPieces) {
  const auto m = render("{{ messages[0].content.replace('X', '<sep>') }}", one_message("aXb"));
  EXPECT_EQ(m.text, "a<sep>b");
  EXPECT_EQ(m.literal, (V{"a", "b"}));
}

TEST(JinjaLiteralSpans, TransformedClientTextIsWhollyClientText) {
  const auto m = render("{{ messages[0].content | upper }}|{{ messages | tojson }}|{{ messages[0].content | indent(2) }}",
                        one_message("a\nb"));
  EXPECT_EQ(m.literal, (V{"A\nB", R"([{"role": "user", "content": "a\nb"}])", "a\n  b"}));
}

TEST(JinjaLiteralSpans, TemplateAndServerTextIsNot) {
  const auto m = render("{{ bos_token }}{{ 'x' }}{% if add_generation_prompt %}<|im_start|>assistant{% endif %}{{ eos_token }}",
                        one_message("c"), {{"bos_token", Value("<s>")}, {"eos_token", Value("</s>")},
                                           {"add_generation_prompt", Value(true)}});
  EXPECT_EQ(m.text, "<s>x<|im_start|>assistant</s>");
  EXPECT_TRUE(m.literal.empty());
}

TEST(JinjaLiteralSpans, SpansSurviveSetBlocksMacrosAndJoins) {
  const auto m = render("{% macro turn(msg) %}<t>{{ msg.content }}</t>{% endmacro %}"
                        "{% set body %}{% for x in messages %}{{ turn(x) }}{% endfor %}{% endset %}{{ body }}|"
                        "{{ messages | map(attribute='content') | join('+') }}|{{ ['<a>', messages[0].content] | join }}",
                        {{"messages", {{{"role", "user"}, {"content", "one"}}, {{"role", "user"}, {"content", "two"}}}}});
  EXPECT_EQ(m.text, "<t>one</t><t>two</t>|one+two|<a>one");
  EXPECT_EQ(m.literal, (V{"one", "two", "one", "two", "one"}));
}

TEST(JinjaLiteralSpans, ClientDictKeysAreClientText) {
  const auto m = render("{% for k, v in tools[0].items() %}{{ k }}={{ v }};{% endfor %}",
                        {{"tools", {{{"<|im_start|>", "v"}}}}});
  EXPECT_EQ(m.text, "<|im_start|>=v;");
  EXPECT_EQ(m.literal, (V{"<|im_start|>", "v"}));
}

}  // namespace
}  // namespace stride::jinja
