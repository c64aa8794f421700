// The generic tool-call format: the grammar that decoding follows, and the
// scanner that reads calls back (whole, and while a reply is being written).
#include <gtest/gtest.h>

#include "grammar_verdict.h"
#include "serving/tool_call_scan.h"
#include "serving/tool_calls.h"

namespace stride::serving {
namespace {

const ToolSpec kWeather{"get_weather", "Weather in a city.",
                       R"({"type": "object", "properties": {"city": {"type": "string"},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                           "required": ["city"], "additionalProperties": false})"};
const ToolSpec kTime{"get_time", "", R"({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]})"};

std::string gbnf_for(ToolChoiceMode mode, bool parallel = true, const std::string& name = "") {
  auto g = tool_call_gbnf({kWeather, kTime}, ToolChoice{mode, name, parallel});
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : "root ::= \"\"";
}

const std::string kParis = R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})";
const std::string kTwo =
    R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}, )"
    R"({"name": "get_time", "arguments": {"tz": "Europe/Paris"}}]})";

TEST(ToolCallGrammar, RequiredAllowsOnlyValidCalls) {
  const std::string g = gbnf_for(ToolChoiceMode::Required);
  EXPECT_TRUE(run(g, kParis).complete);
  EXPECT_TRUE(run(g, kTwo).complete);
  EXPECT_FALSE(run(g, "Hello").prefix);
  EXPECT_FALSE(run(g, " {").prefix);  // no room for text or padding
  EXPECT_FALSE(run(g, R"({"tool_calls": [{"name": "get_wind")").prefix);
  EXPECT_FALSE(run(g, R"({"tool_calls": [{"name": "get_weather", "arguments": {"unit": "kelvin"}}]})").prefix);
  // The schema's required keys: {"unit": ...} alone never completes.
  EXPECT_FALSE(run(g, R"({"tool_calls": [{"name": "get_weather", "arguments": {"unit": "celsius"}}]})").complete);
  EXPECT_FALSE(run(g, R"({"tool_calls": []})").prefix);
  EXPECT_FALSE(run(g, kParis.substr(0, kParis.size() - 1)).complete);
}

TEST(ToolCallGrammar, ParallelFalseAllowsOneCall) {
  const std::string g = gbnf_for(ToolChoiceMode::Required, false);
  EXPECT_TRUE(run(g, kParis).complete);
  EXPECT_FALSE(run(g, kTwo).prefix);
}

TEST(ToolCallGrammar, NamedAllowsThatFunctionOnly) {
  const std::string g = gbnf_for(ToolChoiceMode::Named, true, "get_time");
  EXPECT_TRUE(run(g, R"({"tool_calls": [{"name": "get_time", "arguments": {"tz": "UTC"}}]})").complete);
  EXPECT_FALSE(run(g, kParis).prefix);
  EXPECT_FALSE(tool_call_gbnf({kWeather}, ToolChoice{ToolChoiceMode::Named, "nope", true}).ok());
}

TEST(ToolCallGrammar, AutoAllowsTextOrCalls) {
  const std::string g = gbnf_for(ToolChoiceMode::Auto);
  EXPECT_TRUE(run(g, "").complete);
  EXPECT_TRUE(run(g, "The weather is {probably} fine.\n").complete);
  EXPECT_TRUE(run(g, "\n" + kParis).complete);
  EXPECT_TRUE(run(g, kTwo).complete);
  // A reply that opens with "{" must be a call.
  EXPECT_FALSE(run(g, R"({"answer": 1})").prefix);
  EXPECT_FALSE(run(g, "  {\"tool_calls\": [{\"name\": \"x").prefix);
  EXPECT_FALSE(run(g, "  {\"tool_calls\": [{\"name\": \"get_").complete);
}

TEST(ToolCallGrammar, SchemaErrorsNameTheTool) {
  ToolSpec bad{"f", "", R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 100000}}})"};
  auto g = tool_call_gbnf({kWeather, bad}, ToolChoice{ToolChoiceMode::Required, "", true});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("tools[1] ('f')"), std::string::npos) << g.status().message();
  ToolSpec strict{"s", "", R"({"type": "object", "properties": {"a": {"type": "string", "contentEncoding": "x"}}})",
                  true};
  EXPECT_FALSE(tool_call_gbnf({strict}, ToolChoice{ToolChoiceMode::Auto, "", true}).ok());
  strict.strict = false;
  EXPECT_TRUE(tool_call_gbnf({strict}, ToolChoice{ToolChoiceMode::Auto, "", true}).ok());
}

TEST(ToolCallScan, WholeReplies) {
  ToolCallScan s = scan_tool_calls(kTwo);
  EXPECT_EQ(s.kind, ToolCallScan::Kind::Calls);
  EXPECT_TRUE(s.valid);
  EXPECT_TRUE(s.complete);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, R"({"city": "Paris", "unit": "celsius"})");
  EXPECT_EQ(s.calls[1].name, "get_time");
  EXPECT_EQ(s.calls[1].arguments, R"({"tz": "Europe/Paris"})");
  // Blank space anywhere the JSON allows it, keys in either order, escapes in names.
  s = scan_tool_calls(" \n{ \"tool_calls\" :[ {\"arguments\" : [1, \"]}\"] , \"name\":\"a\\u0062\"} ] }\n");
  EXPECT_TRUE(s.complete);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "ab");
  EXPECT_EQ(s.calls[0].arguments, "[1, \"]}\"]");

  EXPECT_EQ(scan_tool_calls("").kind, ToolCallScan::Kind::Undecided);
  EXPECT_EQ(scan_tool_calls(" \n").kind, ToolCallScan::Kind::Undecided);
  EXPECT_EQ(scan_tool_calls("Hi {").kind, ToolCallScan::Kind::Text);
  EXPECT_FALSE(scan_tool_calls(R"({"answer": 42})").valid);
  EXPECT_FALSE(scan_tool_calls(R"({"tool_calls": []})").valid);
  EXPECT_FALSE(scan_tool_calls(kParis + " and more").valid);
  EXPECT_FALSE(scan_tool_calls(R"({"tool_calls": [{"name": "f"}]})").valid);  // no arguments
}

// Every prefix of a reply finds a prefix of what the whole reply holds.
TEST(ToolCallScan, PrefixesOnlyExtend) {
  const std::string reply =
      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "S\u00e3o Paulo \"SP\"", "n": [1, {"x": null}]}}, )"
      "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"\xE6\x9D\xB1\xE4\xBA\xAC\"}}]}";
  const ToolCallScan whole = scan_tool_calls(reply);
  ASSERT_TRUE(whole.complete);
  ASSERT_EQ(whole.calls.size(), 2u);
  for (size_t n = 0; n < reply.size(); ++n) {
    const ToolCallScan part = scan_tool_calls(reply.substr(0, n));
    EXPECT_TRUE(part.valid) << n;
    EXPECT_FALSE(part.complete) << n;
    ASSERT_LE(part.calls.size(), whole.calls.size());
    for (size_t i = 0; i < part.calls.size(); ++i) {
      const ScannedCall& p = part.calls[i];
      const ScannedCall& w = whole.calls[i];
      if (p.name_done) EXPECT_EQ(p.name, w.name) << n;
      EXPECT_EQ(w.arguments.compare(0, p.arguments.size(), p.arguments), 0) << n << ": " << p.arguments;
      if (p.arguments_done) EXPECT_EQ(p.arguments, w.arguments) << n;
    }
  }
}

TEST(ToolCallFormat, HistoryTextReadsBackAsTheCalls) {
  const std::vector<ToolCall> calls = {{"call_1", "get_weather", R"({"city": "Paris"})"},
                                       {"call_2", "get_time", "not json"}};
  const std::string text = tool_calls_text(calls);
  EXPECT_EQ(text, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, )"
                  R"({"name": "get_time", "arguments": "not json"}]})");
  const ToolCallScan s = scan_tool_calls(text);
  ASSERT_TRUE(s.complete);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[1].arguments, "\"not json\"");
  // The grammar of a required call accepts the history's form of a call.
  EXPECT_TRUE(run(gbnf_for(ToolChoiceMode::Required), tool_calls_text({calls[0]})).complete);
  EXPECT_EQ(tool_result_text("call_1", "get_weather", "18 C"),
            R"({"tool_result": {"id": "call_1", "name": "get_weather", "content": "18 C"}})");
}

TEST(ToolCallFormat, SystemTextDescribesTheToolsAndTheChoice) {
  EXPECT_EQ(tools_system_text({kWeather}, ToolChoice{ToolChoiceMode::None, "", true}), "");
  const std::string t = tools_system_text({kWeather, kTime}, ToolChoice{ToolChoiceMode::Named, "get_time", false});
  EXPECT_NE(t.find(R"({"name": "get_weather", "description": "Weather in a city.", "parameters": {"type": "object", )"
                   R"("properties": {"city": {"type": "string"}, "unit")"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("You must call the tool \"get_time\""), std::string::npos);
  EXPECT_NE(t.find("Call one tool at a time."), std::string::npos);
}

}  // namespace
}  // namespace stride::serving
