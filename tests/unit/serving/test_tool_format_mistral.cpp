// Mistral's [TOOL_CALLS] formats: which templates speak which form, the
// reader of both forms (whole, while being written, hostile), replies the
// official templates write for assistant turns, the grammar of a reply that
// must call, and the 9-character call ids the templates require.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "grammar_verdict.h"
#include "serving/chat_template.h"
#include "serving/tool_format.h"
#include "serving/tool_format_mistral.h"
#include "serving/tool_template_values.h"

namespace stride::serving {
namespace {

const ToolSpec kWeather{"get_weather", "Weather in a city.",
                       R"({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"], "additionalProperties": false})"};
const ToolSpec kTime{"get_time", "", R"({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]})"};

const std::string kJsonCalls =
    "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
    "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}]";
const std::string kArgsCalls =
    "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{\"tz\": \"CET\"}";

std::string template_text(const std::string& name) {
  const char* home = std::getenv("HOME");
  std::ifstream f(std::filesystem::path(home ? home : "/root") / ".cache/stride/chat-templates" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void expect_two_calls(const ToolCallScan& s) {
  ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls);
  EXPECT_TRUE(s.valid && s.complete);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(s.calls[1].name, "get_time");
  EXPECT_EQ(s.calls[1].arguments, "{\"tz\": \"CET\"}");
}

TEST(MistralScan, BothFormsWithParallelCalls) {
  expect_two_calls(scan_mistral_calls(kJsonCalls, false));
  expect_two_calls(scan_mistral_calls(kArgsCalls, true));
  // Small 3.2 writes a call id between the name and the arguments.
  const ToolCallScan id = scan_mistral_calls("[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{\"tz\": \"UTC\"}", true);
  ASSERT_EQ(id.calls.size(), 1u);
  EXPECT_TRUE(id.valid && id.complete);
  EXPECT_EQ(id.calls[0].name, "get_time");
  EXPECT_EQ(id.calls[0].arguments, "{\"tz\": \"UTC\"}");
}

TEST(MistralScan, TextBeforeCallsAndPlainText) {
  const std::string text = "Let me check. " + kArgsCalls;
  const ToolCallScan s = scan_mistral_calls(text, true);
  EXPECT_EQ(text.substr(0, s.content_end), "Let me check. ");
  const ToolCallScan plain = scan_mistral_calls("It is [sunny] today", true);
  EXPECT_EQ(plain.kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(plain.content_safe, plain.content_end);
  const ToolCallScan held = scan_mistral_calls("Checking [TOOL_", false);
  EXPECT_EQ(held.kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(held.content_safe, 9u);
}

TEST(MistralScan, HostileRepliesAreInvalidNotCrashes) {
  for (const std::string& text :
       {std::string("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris}}]"),
        std::string("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": \"Paris\"}]"),
        std::string("[TOOL_CALLS][{\"name\": \"get_weather\"}]"), std::string("[TOOL_CALLS]nope"),
        kJsonCalls + " and more", std::string("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}]]")}) {
    const ToolCallScan s = scan_mistral_calls(text, false);
    EXPECT_EQ(s.kind, ToolCallScan::Kind::Calls) << text;
    EXPECT_FALSE(s.valid) << text;
  }
  for (const std::string& text :
       {std::string("[TOOL_CALLS]get weather[ARGS]{}"), std::string("[TOOL_CALLS]get_weather[ARGS][1]"),
        std::string("[TOOL_CALLS]get_weather[ARGS]{\"city\": Paris}"), std::string("[TOOL_CALLS][ARGS]{}"),
        std::string("[TOOL_CALLS]get_weather[ARGZ]{}"), kArgsCalls + " and more",
        "[TOOL_CALLS]" + std::string(100000, 'n') + "[ARGS]{}"}) {
    const ToolCallScan s = scan_mistral_calls(text, true);
    EXPECT_EQ(s.kind, ToolCallScan::Kind::Calls) << text.substr(0, 80);
    EXPECT_FALSE(s.valid) << text.substr(0, 80);
  }
  // Huge arguments are read whole.
  const std::string big = "{\"city\": \"" + std::string(4 << 20, 'x') + "\"}";
  const ToolCallScan huge = scan_mistral_calls("[TOOL_CALLS]get_weather[ARGS]" + big, true);
  ASSERT_EQ(huge.calls.size(), 1u);
  EXPECT_TRUE(huge.valid && huge.complete);
  EXPECT_EQ(huge.calls[0].arguments.size(), big.size());
  // Deep nesting only finds where the value ends.
  const std::string deep = "[TOOL_CALLS][{\"name\": \"x\", \"arguments\": " + std::string(100000, '[');
  EXPECT_TRUE(scan_mistral_calls(deep, false).valid);
}

TEST(MistralScan, PrefixesOnlyExtend) {
  for (bool args_form : {false, true}) {
    const std::string text = "Sure. " + (args_form ? kArgsCalls : kJsonCalls);
    const ToolCallScan whole = scan_mistral_calls(text, args_form);
    ASSERT_TRUE(whole.valid && whole.complete);
    size_t safe = 0;
    for (size_t n = 0; n <= text.size(); ++n) {
      const ToolCallScan s = scan_mistral_calls(std::string_view(text).substr(0, n), args_form);
      ASSERT_TRUE(s.valid) << n;
      ASSERT_GE(s.content_safe, safe) << n;
      ASSERT_LE(s.content_safe, whole.content_end) << n;
      safe = s.content_safe;
      for (size_t i = 0; i < s.calls.size(); ++i) {
        if (s.calls[i].name_done) EXPECT_EQ(s.calls[i].name, whole.calls[i].name) << n;
        ASSERT_EQ(whole.calls[i].arguments.compare(0, s.calls[i].arguments.size(), s.calls[i].arguments), 0) << n;
      }
    }
    EXPECT_EQ(safe, 6u);
  }
}

TEST(MistralScan, MangledRepliesNeverBreakTheInvariants) {
  std::mt19937 rng(4321);
  for (bool args_form : {false, true})
    for (int round = 0; round < 3000; ++round) {
      std::string text = "Ok. " + (args_form ? kArgsCalls : kJsonCalls);
      for (int e = 0, edits = 1 + (int)(rng() % 4); e < edits && !text.empty(); ++e) {
        const size_t at = rng() % text.size();
        switch (rng() % 3) {
          case 0: text[at] = static_cast<char>(rng() % 256); break;
          case 1: text.erase(at, 1 + rng() % 8); break;
          default: text.insert(at, 1, "{}[]\"<>/\\ \n"[rng() % 11]); break;
        }
      }
      text.resize(rng() % (text.size() + 1));
      const ToolCallScan s = scan_mistral_calls(text, args_form);
      ASSERT_LE(s.content_safe, s.content_end) << text;
      ASSERT_LE(s.content_end, text.size()) << text;
      if (s.kind == ToolCallScan::Kind::Calls && s.valid && s.complete)
        for (const ScannedCall& c : s.calls) {
          ASSERT_TRUE(c.done && c.name_done) << text;
          ASSERT_TRUE(nlohmann::json::parse(c.arguments, nullptr, false).is_object()) << text;
        }
    }
}

// Each official template: its form, and an assistant turn with two calls
// as it renders it (after the prompt that asked) reads back as those calls.
TEST(MistralScan, ReadsWhatTheMistralTemplatesWrite) {
  const struct {
    const char* file;
    ToolFormat format;
  } kTemplates[] = {{"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolFormat::MistralJson},
                    {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolFormat::MistralArgs},
                    {"unsloth-mistral-Devstral-Small-2507.jinja", ToolFormat::MistralArgs},
                    {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", ToolFormat::MistralArgs}};
  for (const auto& [file, format] : kTemplates) {
    SCOPED_TRACE(file);
    const std::string source = template_text(file);
    ASSERT_FALSE(source.empty()) << file << " is missing from the chat template cache";
    EXPECT_EQ(detect_tool_format(source), format);
    auto t = detect_chat_template(source, "llama", ChatTokens{"<s>", "</s>", true});
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    const std::vector<ChatMessage> ask = {{"user", "Weather in Paris, and the time?"}};
    auto prompt = render_chat_marked(*t, ask);
    ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
    ChatMessage calls{"assistant", ""};
    calls.tool_calls = tool_calls_template_value({{mistral_call_id("call_1"), "get_weather", "{\"city\": \"Paris\"}"},
                                                  {mistral_call_id("call_2"), "get_time", "{\"tz\": \"CET\"}"}});
    auto with_calls = render_chat_marked(*t, {ask[0], calls}, {}, false);
    ASSERT_TRUE(with_calls.ok()) << with_calls.status().to_string();
    ASSERT_EQ(with_calls->text.compare(0, prompt->text.size(), prompt->text), 0) << with_calls->text;
    std::string reply = with_calls->text.substr(prompt->text.size());
    if (reply.size() >= 4 && reply.compare(reply.size() - 4, 4, "</s>") == 0) reply.resize(reply.size() - 4);  // EOS ends generation
    const ToolCallScan s = scan_mistral_calls(reply, format == ToolFormat::MistralArgs);
    ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls) << reply;
    EXPECT_TRUE(s.valid && s.complete) << reply;
    ASSERT_EQ(s.calls.size(), 2u) << reply;
    EXPECT_EQ(s.calls[0].name, "get_weather");
    EXPECT_EQ(nlohmann::json::parse(s.calls[0].arguments), nlohmann::json::parse("{\"city\": \"Paris\"}"));
    EXPECT_EQ(s.calls[1].name, "get_time");
  }
}

TEST(MistralGrammar, RequiredNamedAndSingle) {
  for (bool args_form : {false, true}) {
    SCOPED_TRACE(args_form ? "args form" : "json form");
    const std::string both = args_form ? kArgsCalls : kJsonCalls;
    const std::string one = args_form ? "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"CET\"}"
                                      : "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}]";
    auto g = mistral_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Required, "", true}, args_form);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE(run(*g, both).complete);
    EXPECT_TRUE(run(*g, one).complete);
    EXPECT_FALSE(run(*g, "Hello").prefix);
    EXPECT_FALSE(run(*g, args_form ? "[TOOL_CALLS]nope" : "[TOOL_CALLS][{\"name\": \"nope\"").prefix);
    EXPECT_TRUE(scan_mistral_calls(both, args_form).valid);
    auto named = mistral_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Named, "get_time", true}, args_form);
    ASSERT_TRUE(named.ok());
    EXPECT_TRUE(run(*named, one).complete);
    EXPECT_FALSE(run(*named, both).prefix);
    auto single = mistral_call_gbnf({kWeather, kTime}, ToolChoice{ToolChoiceMode::Required, "", false}, args_form);
    ASSERT_TRUE(single.ok());
    EXPECT_FALSE(run(*single, both).complete);
    EXPECT_FALSE(mistral_call_gbnf({kWeather}, ToolChoice{ToolChoiceMode::Auto, "", true}, args_form).ok());
  }
}

TEST(MistralCallId, NineLettersAndDigitsStable) {
  EXPECT_EQ(mistral_call_id("a1B2c3D4e"), "a1B2c3D4e");
  const std::string mapped = mistral_call_id("call_abcdefghijklmnopqrstuvwx");
  ASSERT_EQ(mapped.size(), 9u);
  for (char c : mapped) EXPECT_TRUE(std::isalnum((unsigned char)c)) << mapped;
  EXPECT_EQ(mapped, mistral_call_id("call_abcdefghijklmnopqrstuvwx"));
  EXPECT_NE(mapped, mistral_call_id("call_abcdefghijklmnopqrstuvwy"));
  EXPECT_EQ(mistral_call_id("").size(), 9u);
}

}  // namespace
}  // namespace stride::serving
