// The Llama 3.1 JSON tool format: the reader of {"name", "parameters"}
// replies (whole and while being written) and the grammar of a reply.
#include <gtest/gtest.h>

#include "grammar_verdict.h"
#include "serving/tool_format_llama3.h"

namespace stride::serving {
namespace {

const ToolSpec kTime{"get_time", "", R"({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]})"};
const ToolSpec kCity{"get_weather", "", R"({"type": "object", "properties": {"city": {"type": "string"}}})"};
const std::string kCall = "{\"name\": \"get_time\", \"parameters\": {\"tz\": \"CET\"}}";

TEST(Llama3Scan, OneCallWithOrWithoutThePythonTag) {
  for (const std::string& text : {kCall, "<|python_tag|>" + kCall, "\n " + kCall + "\n"}) {
    const ToolCallScan s = scan_llama3_calls(text);
    ASSERT_EQ(s.kind, ToolCallScan::Kind::Calls) << text;
    EXPECT_TRUE(s.valid && s.complete) << text;
    ASSERT_EQ(s.calls.size(), 1u);
    EXPECT_EQ(s.calls[0].name, "get_time");
    EXPECT_EQ(s.calls[0].arguments, "{\"tz\": \"CET\"}");
  }
}

TEST(Llama3Scan, TextAndMalformedCalls) {
  EXPECT_EQ(scan_llama3_calls("It is noon.").kind, ToolCallScan::Kind::Text);
  EXPECT_EQ(scan_llama3_calls("  ").kind, ToolCallScan::Kind::Undecided);
  EXPECT_EQ(scan_llama3_calls("<|python_t").kind, ToolCallScan::Kind::Undecided);
  for (const std::string& bad : {kCall + " and more", std::string("{\"name\": \"get_time\", \"parameters\": [1]}"),
                                 std::string("{\"name\": \"get_time\", \"parameters\": {tz: 1}}"),
                                 std::string("{\"parameters\": {}}")}) {
    const ToolCallScan s = scan_llama3_calls(bad);
    EXPECT_EQ(s.kind, ToolCallScan::Kind::Calls) << bad;
    EXPECT_FALSE(s.valid) << bad;
  }
}

TEST(Llama3Scan, PrefixesOnlyExtend) {
  for (size_t n = 0; n < kCall.size(); ++n) {
    const ToolCallScan s = scan_llama3_calls(std::string_view(kCall).substr(0, n));
    ASSERT_TRUE(s.valid) << n;
    EXPECT_FALSE(s.complete) << n;
    const std::string whole_args = "{\"tz\": \"CET\"}";
    if (!s.calls.empty()) ASSERT_EQ(whole_args.compare(0, s.calls[0].arguments.size(), s.calls[0].arguments), 0) << n;
  }
}

TEST(Llama3Grammar, ChoicesAndTheParametersKey) {
  auto req = llama3_call_gbnf({kTime, kCity}, ToolChoice{ToolChoiceMode::Required, "", true});
  ASSERT_TRUE(req.ok()) << req.status().message();
  EXPECT_TRUE(run(*req, kCall).complete);
  EXPECT_FALSE(run(*req, "{\"name\": \"get_time\", \"arguments\"").prefix);
  EXPECT_FALSE(run(*req, kCall + " " + kCall).prefix);  // one call per turn
  EXPECT_FALSE(run(*req, "Hello").prefix);
  auto named = llama3_call_gbnf({kTime, kCity}, ToolChoice{ToolChoiceMode::Named, "get_weather", true});
  ASSERT_TRUE(named.ok());
  EXPECT_FALSE(run(*named, kCall).prefix);
  auto aut = llama3_call_gbnf({kTime, kCity}, ToolChoice{ToolChoiceMode::Auto, "", true});
  ASSERT_TRUE(aut.ok());
  EXPECT_TRUE(run(*aut, "Hello there").complete);
  EXPECT_TRUE(run(*aut, kCall).complete);
  EXPECT_FALSE(run(*aut, "{\"tool\"").prefix);
}

}  // namespace
}  // namespace stride::serving
