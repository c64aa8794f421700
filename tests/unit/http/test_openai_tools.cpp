// The tool fields of a chat request: what they become (tool specs in the
// client's key order, the conversation in the generic format) and the errors
// that name the field.
#include <gtest/gtest.h>

#include "http/openai_tools.h"

using namespace stride::server;
using stride::serving::ChatMessage;
using stride::serving::ToolChoiceMode;
using json = nlohmann::json;

namespace {

ApiError tools_of(const std::string& body, ToolsRequest& out) { return read_tools(json::parse(body), body, out); }

}  // namespace

TEST(OpenAiTools, ToolsKeepTheClientsKeyOrder) {
  const std::string body = R"({"tools": [{"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}},
      {"type": "function", "function": {"name": "g"}}], "parallel_tool_calls": false})";
  ToolsRequest t;
  ASSERT_TRUE(tools_of(body, t).ok());
  ASSERT_EQ(t.tools.size(), 2u);
  EXPECT_EQ(t.tools[0].parameters,
            R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})");
  EXPECT_EQ(t.tools[1].parameters, R"({"type": "object", "properties": {}})");  // no parameters: no arguments
  EXPECT_EQ(t.choice.mode, ToolChoiceMode::Auto);
  EXPECT_FALSE(t.choice.parallel);
}

TEST(OpenAiTools, ToolChoice) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  ToolsRequest t;
  ASSERT_TRUE(tools_of("{" + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})", t).ok());
  EXPECT_EQ(t.choice.mode, ToolChoiceMode::Named);
  EXPECT_EQ(t.choice.name, "f");
  ToolsRequest none;
  ASSERT_TRUE(tools_of("{" + tools + R"(, "tool_choice": "none"})", none).ok());
  EXPECT_FALSE(none.active());
  ToolsRequest absent;
  ASSERT_TRUE(tools_of("{}", absent).ok());
  EXPECT_FALSE(absent.active());
  ToolsRequest bad;
  ApiError e = tools_of("{" + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}}})", bad);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "tool_choice");
  e = tools_of(R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                             {"type": "function", "function": {"name": "f"}}]})", bad);
  EXPECT_EQ(e.param, "tools[1].function.name");
  e = tools_of(R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})", bad);
  EXPECT_EQ(e.param, "tools[0].function.name");
}

TEST(OpenAiTools, ConversationInTheGenericFormat) {
  const json msgs = json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}])");
  std::vector<ChatMessage> out = {{"user", "Weather?"}, {"assistant", ""}, {"tool", "18 C"}};
  ToolCallNames names;
  for (size_t i = 0; i < out.size(); ++i) ASSERT_TRUE(read_tool_message(msgs[i], i, out[i], names).ok());
  EXPECT_EQ(out[1].content, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})");
  EXPECT_EQ(out[2].role, "user");
  EXPECT_EQ(out[2].content, R"({"tool_result": {"id": "call_1", "name": "get_weather", "content": "18 C"}})");

  ToolsRequest t;
  ASSERT_TRUE(tools_of(R"({"tools": [{"type": "function", "function": {"name": "get_weather"}}]})", t).ok());
  add_tools_system_text(out, t);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].role, "system");
  EXPECT_NE(out[0].content.find(R"({"name": "get_weather", "parameters": {"type": "object", "properties": {}}})"),
            std::string::npos);
  std::vector<ChatMessage> with_system = {{"system", "Be brief."}, {"user", "Hi"}};
  add_tools_system_text(with_system, t);
  ASSERT_EQ(with_system.size(), 2u);
  EXPECT_EQ(with_system[0].content.rfind("Be brief.\n\nYou can call the following tools.", 0), 0u);
}

TEST(OpenAiTools, MessageErrorsNameTheField) {
  ToolCallNames names;
  ChatMessage m{"assistant", ""};
  ApiError e = read_tool_message(json::parse(R"({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f",
      "arguments": [1]}}]})"), 3, m, names);
  EXPECT_EQ(e.param, "messages[3].tool_calls[0].function.arguments");
  ChatMessage tool{"tool", "x"};
  e = read_tool_message(json::parse(R"({"role": "tool", "content": "x"})"), 1, tool, names);
  EXPECT_EQ(e.param, "messages[1].tool_call_id");
}
