// The Hermes tool format (Qwen2.5 / Qwen3 / Hermes templates): which
// templates speak it, the reader of <tool_call> replies (whole and while
// being written), and the grammar of a reply that must call.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>

#include "grammar_verdict.h"
#include "tool_format_test_util.h"
#include "serving/tool_format.h"
#include "serving/tool_format_hermes.h"

namespace stride::serving {
namespace {

using testing::kTime;
using testing::kWeather;
using testing::mangle;
using testing::template_text;

const std::string kCall1 = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kCall2 = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";

TEST(HermesScan, OneCall) {
  const ToolCallScan s = scan_hermes_calls(kCall1);
  ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls);
  EXPECT_TRUE(s.valid);
  EXPECT_TRUE(s.complete);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(s.content_end, 0u);
}

TEST(HermesScan, TextBeforeSeveralCalls) {
  const std::string text = "Let me look.\n\n" + kCall1 + "\n" + kCall2 + "\n";
  const ToolCallScan s = scan_hermes_calls(text);
  ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls);
  EXPECT_TRUE(s.valid && s.complete);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[1].name, "get_time");
  EXPECT_EQ(s.calls[1].arguments, "{\"tz\": \"CET\"}");
  EXPECT_EQ(text.substr(0, s.content_end), "Let me look.\n\n");
}

TEST(HermesScan, PlainTextIsText) {
  const ToolCallScan s = scan_hermes_calls("The weather is fine <b>today</b>.");
  EXPECT_EQ(s.kind, ToolCallScan::Kind::Text);
  EXPECT_TRUE(s.calls.empty());
  EXPECT_EQ(s.content_safe, s.content_end);
}

TEST(HermesScan, MalformedBlocksAreInvalid) {
  // Not JSON inside the tags, a missing closing tag, text after the calls,
  // a call without arguments: the reply is text, not a call.
  for (const std::string& text :
       {std::string("<tool_call>\nget_weather(city='Paris')\n</tool_call>"),
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n<tool_call>"),
        kCall1 + "\nAnd that is all.", std::string("<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>"),
        std::string("<tool_call>\n{\"name\": get_weather, \"arguments\": {}}\n</tool_call>"),
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris}}\n</tool_call>"),
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"Paris\"}\n</tool_call>")}) {
    const ToolCallScan s = scan_hermes_calls(text);
    EXPECT_EQ(s.kind, ToolCallScan::Kind::Calls) << text;
    EXPECT_FALSE(s.valid) << text;
  }
}

TEST(HermesScan, PrefixesOnlyExtend) {
  const std::string text = "Sure. " + kCall1 + "\n" + kCall2;
  const ToolCallScan whole = scan_hermes_calls(text);
  size_t safe = 0;
  for (size_t n = 0; n <= text.size(); ++n) {
    const ToolCallScan s = scan_hermes_calls(std::string_view(text).substr(0, n));
    ASSERT_TRUE(s.valid) << n;
    // What streaming sends as content never shrinks and is content of the whole reply.
    ASSERT_GE(s.content_safe, safe) << n;
    ASSERT_LE(s.content_safe, whole.content_end) << n;
    safe = s.content_safe;
    for (size_t i = 0; i < s.calls.size(); ++i) {
      const ScannedCall& c = s.calls[i];
      if (c.name_done) EXPECT_EQ(c.name, whole.calls[i].name) << n;
      ASSERT_EQ(whole.calls[i].arguments.compare(0, c.arguments.size(), c.arguments), 0) << n;
    }
    // Complete exactly where a block has just closed (blank space may follow).
    const size_t end = text.find_last_not_of(" \n", n - 1) + 1;
    const bool closed = n > 0 && end >= 12 && text.compare(end - 12, 12, "</tool_call>") == 0;
    EXPECT_EQ(s.complete, closed) << n;
  }
  EXPECT_EQ(safe, 6u);  // "Sure. "
}

TEST(HermesScan, HoldsBackAPartialOpeningTag) {
  const ToolCallScan s = scan_hermes_calls("Checking <tool_c");
  EXPECT_EQ(s.kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(s.content_safe, 9u);
  EXPECT_EQ(s.content_end, 16u);
}

TEST(HermesScan, MangledRepliesNeverBreakTheInvariants) {
  // Random edits and cuts of a valid reply: the reader never fails, its
  // content bounds stay inside the text, and calls it calls valid are JSON.
  const std::string base = "Ok. " + kCall1 + "\n" + kCall2;
  std::mt19937 rng(1234);
  for (int round = 0; round < 3000; ++round) {
    const std::string text = mangle(base, rng);
    const ToolCallScan s = scan_hermes_calls(text);
    ASSERT_LE(s.content_safe, s.content_end) << text;
    ASSERT_LE(s.content_end, text.size()) << text;
    if (s.kind == ToolCallScan::Kind::Calls && s.valid && s.complete) {
      for (const ScannedCall& c : s.calls) {
        ASSERT_TRUE(c.done && c.name_done) << text;
        ASSERT_TRUE(nlohmann::json::accept(c.arguments)) << text;
      }
    }
  }
}

TEST(HermesGrammar, RequiredAllowsBlocksOnly) {
  auto g = hermes_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Required, "", true});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(run(*g, kCall1).complete);
  EXPECT_TRUE(run(*g, kCall1 + "\n" + kCall2).complete);
  EXPECT_FALSE(run(*g, "Hello").prefix);
  EXPECT_FALSE(run(*g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\"").prefix);
  EXPECT_FALSE(run(*g, "<tool_call>\n{\"name\": \"nope\"").prefix);
  // Whatever the grammar completes, the reader reads back as valid calls.
  EXPECT_TRUE(scan_hermes_calls(kCall1 + "\n" + kCall2).valid);
}

TEST(HermesGrammar, NamedAndSingleCall) {
  auto named = hermes_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Named, "get_time", true});
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(run(*named, kCall2).complete);
  EXPECT_FALSE(run(*named, kCall1).prefix);
  EXPECT_FALSE(run(*named, kCall2 + "\n" + kCall2).prefix);
  auto single = hermes_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Required, "", false});
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(run(*single, kCall1 + "\n" + kCall2).prefix);
  EXPECT_FALSE(hermes_call_gbnf({kWeather}, ToolChoice{ToolChoiceMode::Auto, "", true}).ok());
}

TEST(ToolFormatDetection, FromTheTemplateSource) {
  for (const char* hermes : {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                             "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"}) {
    const std::string t = template_text(hermes);
    ASSERT_FALSE(t.empty()) << hermes << " is missing from the chat template cache";
    EXPECT_EQ(detect_tool_format(t), ToolFormat::Hermes) << hermes;
  }
  for (const char* llama : {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
                            "meta-llama-Llama-3.3-70B-Instruct.jinja"}) {
    const std::string t = template_text(llama);
    ASSERT_FALSE(t.empty()) << llama << " is missing from the chat template cache";
    EXPECT_EQ(detect_tool_format(t), ToolFormat::Llama3) << llama;
  }
  // <tool_call> with XML arguments (GLM, Qwen3-Coder) is neither.
  for (const char* other : {"GLM-4.6.jinja", "Qwen3-Coder.jinja", "HuggingFaceTB-SmolLM3-3B.jinja"}) {
    const std::string t = template_text(other);
    ASSERT_FALSE(t.empty()) << other << " is missing from the chat template cache";
    EXPECT_EQ(detect_tool_format(t), ToolFormat::Generic) << other;
  }
}

}  // namespace
}  // namespace stride::serving
