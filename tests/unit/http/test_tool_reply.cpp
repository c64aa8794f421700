// The response side of the tool formats with control tokens: a harmony reply
// becomes reasoning_content, content and calls, whole and as deltas that add
// up to the whole at every cut point; Mistral calls likewise; a reply that
// takes back what it seemed to write never breaks the stream.
#include <gtest/gtest.h>

#include <string>

#include "http/tool_reply.h"

using namespace stride::server;
using stride::serving::ToolFormat;
using json = nlohmann::json;

namespace {

json completion_of(const std::string& text) {
  return {{"choices", {{{"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}}};
}

struct Streamed {
  std::string reasoning, content, finish;
  json calls = json::array();  // [{name, arguments}] by index
};

// Every prefix of `text` fed in turn, then finish.
Streamed stream(ToolFormat format, const std::string& text, bool tools, size_t step) {
  ToolReplyStream s(format, tools);
  Streamed out;
  auto take = [&](const std::vector<json>& deltas) {
    for (const json& d : deltas) {
      if (d.contains("reasoning_content")) out.reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("content")) out.content += d["content"].get<std::string>();
      if (!d.contains("tool_calls")) continue;
      const json& c = d["tool_calls"][0];
      const size_t i = c["index"].get<size_t>();
      if (i == out.calls.size()) out.calls.push_back({{"name", c["function"]["name"]}, {"arguments", ""}});
      out.calls[i]["arguments"] = out.calls[i]["arguments"].get<std::string>() + c["function"]["arguments"].get<std::string>();
    }
  };
  for (size_t n = 0; n < text.size(); n += step) take(s.update(text.substr(0, n)));
  out.finish = "stop";
  take(s.finish(text, out.finish));
  return out;
}

const std::string kAnswer =
    "<|channel|>analysis<|message|>Thinking about \xC3\xA9t\xC3\xA9.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is warm \xE2\x80\x94 28 C.";
const std::string kCall =
    "<|channel|>analysis<|message|>Need the tool.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}";

}  // namespace

TEST(ToolReplyHarmony, ReasoningIsNeverContent) {
  for (bool tools : {false, true}) {
    json c = completion_of(kAnswer);
    apply_tool_calls(c, kAnswer, ToolFormat::Harmony, tools);
    const json& m = c["choices"][0]["message"];
    EXPECT_EQ(m["content"], "It is warm \xE2\x80\x94 28 C.");
    EXPECT_EQ(m["reasoning_content"], "Thinking about \xC3\xA9t\xC3\xA9.");
    EXPECT_FALSE(m.contains("tool_calls"));
    for (size_t step : {1u, 2u, 5u, 13u}) {
      const Streamed s = stream(ToolFormat::Harmony, kAnswer, tools, step);
      EXPECT_EQ(s.reasoning, m["reasoning_content"]) << step;
      EXPECT_EQ(s.content, m["content"]) << step;
      EXPECT_EQ(s.finish, "stop");
    }
  }
}

TEST(ToolReplyHarmony, CallsWithTheirReasoning) {
  json c = completion_of(kCall);
  apply_tool_calls(c, kCall, ToolFormat::Harmony, true);
  const json& m = c["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(m["reasoning_content"], "Need the tool.");
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\"}");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "tool_calls");
  for (size_t step : {1u, 3u, 7u}) {
    const Streamed s = stream(ToolFormat::Harmony, kCall, true, step);
    EXPECT_EQ(s.reasoning, "Need the tool.");
    EXPECT_EQ(s.content, "");
    ASSERT_EQ(s.calls.size(), 1u);
    EXPECT_EQ(s.calls[0]["name"], "get_weather");
    EXPECT_EQ(s.calls[0]["arguments"], "{\"city\": \"Paris\"}");
    EXPECT_EQ(s.finish, "tool_calls");
  }
  // Without tools offered, a call is not reported.
  json no_tools = completion_of(kCall);
  apply_tool_calls(no_tools, kCall, ToolFormat::Harmony, false);
  EXPECT_FALSE(no_tools["choices"][0]["message"].contains("tool_calls"));
}

TEST(ToolReplyMistral, ParallelCallsStreamed) {
  const std::string text = "Checking. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}";
  for (size_t step : {1u, 4u}) {
    const Streamed s = stream(ToolFormat::MistralArgs, text, true, step);
    EXPECT_EQ(s.content, "Checking. ");
    ASSERT_EQ(s.calls.size(), 2u);
    EXPECT_EQ(s.calls[1]["name"], "get_time");
    EXPECT_EQ(s.calls[1]["arguments"], "{\"tz\": \"UTC\"}");
    EXPECT_EQ(s.finish, "tool_calls");
  }
}

// A reply no grammar wrote: "parameters" first (read as the arguments so
// far), then "arguments", which replace them. The stream keeps going.
TEST(ToolReplyStreamTest, ArgumentsTakenBackDoNotBreakTheStream) {
  const std::string text =
      "[TOOL_CALLS][{\"name\": \"f\", \"parameters\": \"xxxxxxxxxxxx\", \"arguments\": {\"a\": 1}}]";
  for (ToolFormat f : {ToolFormat::MistralJson, ToolFormat::Hermes, ToolFormat::Generic}) {
    EXPECT_NO_THROW(stream(f, text, true, 1));
  }
}
