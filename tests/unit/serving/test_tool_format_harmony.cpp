// The harmony format (gpt-oss): the reader of a reply's channels (reasoning,
// content, calls to functions.NAME), whole and while being written, on
// replies the official gpt-oss chat template writes for assistant turns, on
// hostile text, and the grammar of a reply that must call.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "grammar_verdict.h"
#include "serving/chat_template.h"
#include "serving/tool_format.h"
#include "serving/tool_format_harmony.h"
#include "serving/tool_template_values.h"

namespace stride::serving {
namespace {

const ToolSpec kWeather{"get_weather", "Weather in a city.",
                       R"({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"], "additionalProperties": false})"};
const ToolSpec kTime{"get_time", "", R"({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]})"};

const std::string kReasoning = "<|channel|>analysis<|message|>The user wants the weather. Call get_weather.<|end|>";
const std::string kCall =
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    "{\"city\": \"Paris\"}<|call|>";

std::string template_text(const std::string& name) {
  const char* home = std::getenv("HOME");
  std::ifstream f(std::filesystem::path(home ? home : "/root") / ".cache/stride/chat-templates" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(HarmonyScan, ReasoningThenCall) {
  const ToolCallScan s = scan_harmony_reply(kReasoning + kCall);
  ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls);
  EXPECT_TRUE(s.channels && s.valid && s.complete);
  EXPECT_EQ(s.reasoning, "The user wants the weather. Call get_weather.");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(HarmonyScan, ReasoningThenFinalAnswer) {
  // <|return|> is an end token: the text usually stops before it.
  for (const char* end : {"", "<|return|>"}) {
    const ToolCallScan s =
        scan_harmony_reply(kReasoning + "<|start|>assistant<|channel|>final<|message|>It is sunny." + end);
    EXPECT_EQ(s.kind, ToolCallScan::Kind::Text);
    EXPECT_EQ(s.reasoning, "The user wants the weather. Call get_weather.");
    EXPECT_EQ(s.content, "It is sunny.");
    EXPECT_EQ(s.content_end, s.content.size());
    EXPECT_TRUE(s.calls.empty());
  }
}

TEST(HarmonyScan, RecipientInTheRoleHeaderAndAPreamble) {
  // The recipient may sit in the role header; commentary without one is a
  // preamble the user sees.
  const std::string text =
      "<|channel|>commentary<|message|>Checking the weather.<|end|>"
      "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{\"tz\": \"CET\"}";
  const ToolCallScan s = scan_harmony_reply(text);
  ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls);
  EXPECT_TRUE(s.valid && s.complete);
  EXPECT_EQ(s.content, "Checking the weather.");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_time");
  EXPECT_EQ(s.calls[0].arguments, "{\"tz\": \"CET\"}");
}

TEST(HarmonyScan, PlainTextIsContent) {
  const ToolCallScan s = scan_harmony_reply("Hello <|there|> friend");
  EXPECT_EQ(s.kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(s.content, "Hello <|there|> friend");
  EXPECT_TRUE(s.reasoning.empty());
  EXPECT_EQ(scan_harmony_reply("").kind, ToolCallScan::Kind::Undecided);
  EXPECT_EQ(scan_harmony_reply("<|chan").kind, ToolCallScan::Kind::Undecided);
}

TEST(HarmonyScan, HostileReplies) {
  // A broken header: the rest is content, nothing is lost or invented.
  const ToolCallScan broken = scan_harmony_reply(kReasoning + "<|start|>assistant<|end|>oops");
  EXPECT_EQ(broken.kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(broken.content, "<|start|>assistant<|end|>oops");
  // Arguments that are not a JSON object, or a call with no body: invalid calls.
  for (const std::string& body : {std::string("{\"city\": Paris}"), std::string("[1, 2]"), std::string("\"x\""),
                                  std::string("{\"city\": \"Paris\"} trailing"), std::string("")}) {
    const ToolCallScan s = scan_harmony_reply("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" +
                                              body + "<|call|>");
    ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls) << body;
    EXPECT_FALSE(s.valid) << body;
  }
  // A header that never closes and grows without bound.
  const ToolCallScan endless = scan_harmony_reply("<|channel|>" + std::string(1 << 20, 'a'));
  EXPECT_EQ(endless.kind, ToolCallScan::Kind::Text);
  EXPECT_TRUE(endless.calls.empty());
  // Huge arguments are read whole.
  const std::string big = "{\"city\": \"" + std::string(4 << 20, 'x') + "\"}";
  const ToolCallScan huge = scan_harmony_reply("<|channel|>commentary to=functions.get_weather<|message|>" + big);
  ASSERT_EQ(huge.calls.size(), 1u);
  EXPECT_TRUE(huge.valid && huge.complete);
  EXPECT_EQ(huge.calls[0].arguments.size(), big.size());
}

TEST(HarmonyScan, PrefixesOnlyExtend) {
  const std::string text = kReasoning + "<|start|>assistant<|channel|>commentary<|message|>One moment.<|end|>" + kCall;
  const ToolCallScan whole = scan_harmony_reply(text);
  ASSERT_TRUE(whole.valid && whole.complete);
  size_t content = 0, reasoning = 0;
  for (size_t n = 0; n <= text.size(); ++n) {
    const ToolCallScan s = scan_harmony_reply(std::string_view(text).substr(0, n));
    ASSERT_TRUE(s.valid) << n;
    // What streaming sends never shrinks, and is what the whole reply holds.
    ASSERT_GE(s.content_safe, content) << n;
    ASSERT_GE(s.reasoning_safe, reasoning) << n;
    ASSERT_EQ(whole.content.compare(0, s.content_safe, s.content, 0, s.content_safe), 0) << n;
    ASSERT_EQ(whole.reasoning.compare(0, s.reasoning_safe, s.reasoning, 0, s.reasoning_safe), 0) << n;
    content = s.content_safe;
    reasoning = s.reasoning_safe;
    for (size_t i = 0; i < s.calls.size(); ++i) {
      EXPECT_EQ(s.calls[i].name, whole.calls[i].name) << n;
      ASSERT_EQ(whole.calls[i].arguments.compare(0, s.calls[i].arguments.size(), s.calls[i].arguments), 0) << n;
    }
  }
  EXPECT_EQ(whole.content, "One moment.");
}

TEST(HarmonyScan, MangledRepliesNeverBreakTheInvariants) {
  const std::string base = kReasoning + kCall;
  std::mt19937 rng(99);
  for (int round = 0; round < 3000; ++round) {
    std::string text = base;
    for (int e = 0, edits = 1 + (int)(rng() % 4); e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, "{}[]\"<>|/ \n"[rng() % 11]); break;
      }
    }
    text.resize(rng() % (text.size() + 1));
    const ToolCallScan s = scan_harmony_reply(text);
    ASSERT_LE(s.content_safe, s.content.size()) << text;
    ASSERT_LE(s.content.size() + s.reasoning.size(), text.size()) << text;
    if (s.kind == ToolCallScan::Kind::Calls && s.valid && s.complete)
      for (const ScannedCall& c : s.calls) ASSERT_TRUE(nlohmann::json::parse(c.arguments, nullptr, false).is_object()) << text;
  }
}

// The official gpt-oss template writes earlier assistant turns the way the
// model writes them: what it renders after the generation prompt reads back.
TEST(HarmonyScan, ReadsWhatTheGptOssTemplateWrites) {
  const std::string source = template_text("openai-gpt-oss-120b.jinja");
  ASSERT_FALSE(source.empty()) << "openai-gpt-oss-120b.jinja is missing from the chat template cache";
  EXPECT_EQ(detect_tool_format(source), ToolFormat::Harmony);
  auto t = detect_chat_template(source, "gpt-oss");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const std::vector<ChatMessage> ask = {{"user", "Weather in Paris?"}};
  auto prompt = render_chat_marked(*t, ask);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();

  ChatMessage call{"assistant", ""};
  call.thinking = "Need the weather tool.";
  call.tool_calls = tool_calls_template_value({{"call_1", "get_weather", "{\"city\": \"Paris\"}"}});
  auto with_call = render_chat_marked(*t, {ask[0], call}, {}, false);
  ASSERT_TRUE(with_call.ok()) << with_call.status().to_string();
  ASSERT_EQ(with_call->text.compare(0, prompt->text.size(), prompt->text), 0) << with_call->text;
  const ToolCallScan s = scan_harmony_reply(with_call->text.substr(prompt->text.size()));
  ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls) << with_call->text;
  EXPECT_TRUE(s.valid && s.complete);
  EXPECT_EQ(s.reasoning, "Need the weather tool.");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(s.calls[0].arguments), nlohmann::json::parse("{\"city\": \"Paris\"}"));

  ChatMessage answer{"assistant", "Sunny, 21 C."};
  answer.thinking = "Tool said sunny.";
  auto with_answer = render_chat_marked(*t, {ask[0], answer}, {}, false);
  ASSERT_TRUE(with_answer.ok()) << with_answer.status().to_string();
  ASSERT_EQ(with_answer->text.compare(0, prompt->text.size(), prompt->text), 0);
  const ToolCallScan a = scan_harmony_reply(with_answer->text.substr(prompt->text.size()));
  EXPECT_EQ(a.kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(a.reasoning, "Tool said sunny.");
  EXPECT_EQ(a.content, "Sunny, 21 C.");
}

TEST(HarmonyGrammar, RequiredAndNamed) {
  const std::string header = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>";
  auto g = harmony_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Required, "", true});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(run(*g, header + "{\"city\": \"Paris\"}").complete);
  EXPECT_TRUE(run(*g, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{\"tz\": \"CET\"}").complete);
  EXPECT_FALSE(run(*g, "<|channel|>final<|message|>Hi").prefix);
  EXPECT_FALSE(run(*g, header + "{\"town\"").prefix);
  EXPECT_TRUE(scan_harmony_reply(header + "{\"city\": \"Paris\"}").complete);
  auto named = harmony_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Named, "get_time", true});
  ASSERT_TRUE(named.ok());
  EXPECT_FALSE(run(*named, header).prefix);
  EXPECT_FALSE(harmony_call_gbnf({kWeather}, ToolChoice{ToolChoiceMode::Auto, "", true}).ok());
  EXPECT_FALSE(harmony_call_gbnf({kWeather}, ToolChoice{ToolChoiceMode::Named, "nope", true}).ok());
}

}  // namespace
}  // namespace stride::serving
