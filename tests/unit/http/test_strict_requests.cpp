// Requests read as strictly as OpenAI's official schema (openapi.yml, API
// 2.3.0) reads them: each expectation quotes the schema constraint that makes
// the body valid or invalid.
#include <gtest/gtest.h>

#include "http/legacy_functions.h"
#include "http/openai_fields.h"
#include "http/openai_request.h"

using namespace stride::server;
using json = nlohmann::json;

namespace {

struct Parsed {
  ApiError error;
  stride::serving::GenerationRequest g;
  GenerationCall call;
};

Parsed read(const json& body, bool chat = true, bool strict = true) {
  static stride::serving::ServeConfig cfg;
  cfg.strict_requests = strict;
  ParseContext ctx;
  ctx.cfg = &cfg;
  ctx.n_vocab = 1000;
  ctx.model_names = {"m"};
  const std::string text = body.dump();
  ctx.body = text;
  Parsed p;
  p.error = read_generation(body, chat, ctx, p.g, p.call);
  return p;
}

json chat(json extra = json::object()) {
  json b = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  b.update(extra);
  return b;
}

json completion(json extra = json::object()) {
  json b = {{"model", "m"}, {"prompt", "Hi"}};
  b.update(extra);
  return b;
}

void expect_400(const json& body, const std::string& param, bool is_chat = true) {
  const Parsed p = read(body, is_chat);
  EXPECT_EQ(p.error.status, 400) << body.dump();
  EXPECT_EQ(p.error.param, param) << body.dump() << " -> " << p.error.message;
}

}  // namespace

TEST(StrictRequests, UnknownTopLevelFieldsAreRefusedAsOpenAIRefusesThem) {
  const Parsed p = read(chat({{"temprature", 0.5}}));
  EXPECT_EQ(p.error.status, 400);
  EXPECT_EQ(p.error.param, "temprature");
  EXPECT_EQ(p.error.message, "Unrecognized request argument supplied: temprature");
  expect_400(completion({{"messages", json::array()}}), "messages", false);
  // strict_requests off: the field is left unread.
  EXPECT_TRUE(read(chat({{"temprature", 0.5}}), true, false).error.ok());
  // The documented extensions are known.
  for (const char* key : {"top_k", "min_p", "repetition_penalty", "ignore_eos", "chat_template_kwargs"}) {
    EXPECT_TRUE(known_field(Endpoint::Chat, key)) << key;
  }
  EXPECT_TRUE(known_field(Endpoint::Completions, "parse_special"));
  EXPECT_FALSE(known_field(Endpoint::Chat, "parse_special"));
  EXPECT_FALSE(known_field(Endpoint::Embeddings, "encoding"));
}

TEST(StrictRequests, MessagesMeetTheirRoleSchemas) {
  // ChatCompletionRequestUserMessage: required [content, role]; content oneOf string | array minItems 1.
  expect_400(chat({{"messages", {{{"role", "user"}}}}}), "messages[0].content");
  expect_400(chat({{"messages", {{{"role", "user"}, {"content", nullptr}}}}}), "messages[0].content");
  expect_400(chat({{"messages", {{{"role", "user"}, {"content", json::array()}}}}}), "messages[0].content");
  // ChatCompletionRequestToolMessage: required [role, content, tool_call_id].
  const json call = {{"id", "call_1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}};
  expect_400(chat({{"messages",
                    {{{"role", "user"}, {"content", "Hi"}},
                     {{"role", "assistant"}, {"tool_calls", json::array({call})}},
                     {{"role", "tool"}, {"tool_call_id", "call_1"}}}}}),
             "messages[2].content");
  // ChatCompletionMessageToolCall: required [id, type, function].
  json no_id = call;
  no_id.erase("id");
  expect_400(chat({{"messages", {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"tool_calls", json::array({no_id})}}}}}),
             "messages[1].tool_calls[0].id");
  // ChatCompletionRequestAssistantMessage: content anyOf [..., null]; not required.
  EXPECT_TRUE(read(chat({{"messages", {{{"role", "user"}, {"content", "Hi"}},
                                       {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}},
                                       {{"role", "tool"}, {"content", "1"}, {"tool_call_id", "call_1"}}}}}))
                  .error.ok());
  // The discriminator's roles only.
  expect_400(chat({{"messages", {{{"role", "robot"}, {"content", "Hi"}}}}}), "messages[0].role");
}

TEST(StrictRequests, EnumsTypesAndBoundsOfTheOfficialSchema) {
  expect_400(chat({{"modalities", {"smell"}}}), "modalities");        // items enum [text, audio]
  expect_400(chat({{"service_tier", "gold"}}), "service_tier");       // enum [auto, default, flex, scale, priority]
  expect_400(chat({{"verbosity", json::object()}}), "verbosity");     // enum [low, medium, high]
  expect_400(chat({{"store", json::object()}}), "store");             // type boolean
  expect_400(chat({{"metadata", {{"a", 1}}}}), "metadata.a");         // additionalProperties: string
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  expect_400(chat({{"metadata", many}}), "metadata");                 // at most 16 pairs (Metadata's description)
  expect_400(chat({{"metadata", {{std::string(65, 'k'), "v"}}}}), "metadata");
  expect_400(chat({{"metadata", {{"k", std::string(513, 'v')}}}}), "metadata.k");
  EXPECT_TRUE(read(chat({{"metadata", {{std::string(64, 'k'), std::string(512, 'v')}}}})).error.ok());
  // ResponseFormatJsonSchema.json_schema: required [name].
  expect_400(chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "object"}}}}}}}}),
             "response_format");
  expect_400(chat({{"stop", {"a", "b", "c", "d", "e"}}}), "stop");    // StopConfiguration: maxItems 4
  expect_400(chat({{"stop", json::array()}}), "stop");                // minItems 1
  EXPECT_TRUE(read(chat({{"stop", {"a", "b", "c", "d"}}})).error.ok());
  // seed: type integer, format int64.
  expect_400(json::parse(R"({"messages":[{"role":"user","content":"Hi"}],"seed":9223372036854775808})"), "seed");
  EXPECT_TRUE(read(json::parse(R"({"messages":[{"role":"user","content":"Hi"}],"seed":-9223372036854775808})"))
                  .error.ok());
  expect_400(chat({{"functions", "f"}}), "functions");                // type array
  expect_400(chat({{"function_call", 5}}), "function_call");          // oneOf enum [none, auto] | {name}
  expect_400(chat({{"audio", 5}}), "audio");                          // type object
  expect_400(chat({{"prediction", 5}}), "prediction");
  expect_400(chat({{"web_search_options", 5}}), "web_search_options");
  expect_400(completion({{"logprobs", 6}}), "logprobs", false);      // CreateCompletionRequest.logprobs maximum 5
  EXPECT_TRUE(read(completion({{"logprobs", 5}}), false).error.ok());
  expect_400(chat({{"reasoning_effort", "extreme"}}), "reasoning_effort");
  EXPECT_TRUE(read(chat({{"reasoning_effort", "xhigh"}})).error.ok());
}

TEST(StrictRequests, UnimplementedFieldsAreRefusedAndHarmlessOnesIgnored) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"modalities", {"text", "audio"}},
           {"audio", {{"voice", "alloy"}, {"format", "mp3"}}},
           {"prediction", {{"type", "content"}, {"content", "x"}}},
           {"web_search_options", json::object()},
           {"store", true}}) {
    const Parsed p = read(chat({{key, value}}));
    EXPECT_EQ(p.error.status, 400) << key;
    EXPECT_EQ(p.error.param, key);
    EXPECT_EQ(p.error.code, "unsupported_parameter") << key;
  }
  const json harmless = {{"service_tier", "flex"},  {"prompt_cache_key", "k"},  {"safety_identifier", "u1"},
                         {"user", "u"},            {"store", false},          {"metadata", {{"a", "b"}}},
                         {"verbosity", "low"},     {"parallel_tool_calls", true}, {"modalities", {"text"}},
                         {"prompt_cache_retention", "24h"}, {"audio", nullptr}};
  const Parsed p = read(chat(harmless));
  EXPECT_TRUE(p.error.ok()) << p.error.param << ": " << p.error.message;
}

TEST(StrictRequests, ValidValuesOnceRefusedAreAccepted) {
  // top_p: minimum 0 (inclusive).
  Parsed p = read(chat({{"top_p", 0}}));
  ASSERT_TRUE(p.error.ok()) << p.error.message;
  EXPECT_EQ(p.g.sampling.top_p, 0.0f);
  // JSON Schema: "integer" matches any number with a zero fractional part.
  p = read(chat({{"max_completion_tokens", 5.0}, {"top_logprobs", 2.0}, {"logprobs", true}, {"seed", 7.0}}));
  ASSERT_TRUE(p.error.ok()) << p.error.message;
  EXPECT_EQ(*p.g.max_tokens, 5);
  EXPECT_EQ(p.g.top_logprobs, 2);
  EXPECT_EQ(p.g.sampling.seed, 7u);
  expect_400(chat({{"max_completion_tokens", 5.5}}), "max_completion_tokens");
  // CreateCompletionRequest.max_tokens: minimum 0.
  p = read(completion({{"max_tokens", 0}}), false);
  ASSERT_TRUE(p.error.ok()) << p.error.message;
  EXPECT_EQ(*p.g.max_tokens, 0);
  p = read(completion({{"prompt", json::array({1.0, 2.0})}}), false);
  ASSERT_TRUE(p.error.ok()) << p.error.message;
  EXPECT_EQ(p.g.tokens, (std::vector<int32_t>{1, 2}));
}

TEST(StrictRequests, LegacyFunctionsBecomeTools) {
  const json fn = {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}};
  Parsed p = read(chat({{"functions", json::array({fn})}, {"function_call", {{"name", "get_weather"}}}}));
  ASSERT_TRUE(p.error.ok()) << p.error.message;
  EXPECT_TRUE(p.call.tools.legacy_functions);
  ASSERT_EQ(p.call.tools.tools.size(), 1u);
  EXPECT_EQ(p.call.tools.tools[0].name, "get_weather");
  EXPECT_EQ(p.call.tools.choice.mode, stride::serving::ToolChoiceMode::Named);
  EXPECT_FALSE(p.call.tools.choice.parallel);
  p = read(chat({{"functions", json::array({fn})}, {"function_call", "none"}}));
  ASSERT_TRUE(p.error.ok());
  EXPECT_EQ(p.call.tools.choice.mode, stride::serving::ToolChoiceMode::None);
  // Errors name the legacy fields.
  expect_400(chat({{"functions", {{{"name", "bad name"}}}}}), "functions[0].name");
  expect_400(chat({{"functions", json::array({fn})}, {"function_call", {{"name", "other"}}}}), "function_call");
  expect_400(chat({{"functions", json::array({fn})}, {"tools", {{{"type", "function"}, {"function", fn}}}}}), "functions");
  // An earlier turn's function_call and its "function" result.
  p = read(chat({{"functions", json::array({fn})},
                 {"messages",
                  {{{"role", "user"}, {"content", "Weather?"}},
                   {{"role", "assistant"}, {"content", nullptr},
                    {"function_call", {{"name", "get_weather"}, {"arguments", "{}"}}}},
                   {{"role", "function"}, {"name", "get_weather"}, {"content", "sunny"}}}}}));
  ASSERT_TRUE(p.error.ok()) << p.error.message;
  ASSERT_EQ(p.g.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(p.g.messages[2].role, "tool");
  EXPECT_EQ(p.g.messages[2].tool_call_id, p.g.messages[1].tool_calls[0].id);
}

TEST(StrictRequests, LegacyReplyCarriesFunctionCall) {
  // ChatCompletionResponseMessage.function_call: {arguments, name}, both required.
  json completion = {{"choices", {{{"index", 0},
                                    {"finish_reason", "tool_calls"},
                                    {"message", {{"role", "assistant"}, {"content", nullptr},
                                                 {"tool_calls", {{{"id", "c"}, {"type", "function"},
                                                                  {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}}}}}}};
  use_legacy_function_call(completion);
  const json& choice = completion["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "function_call");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_EQ(choice["message"]["function_call"], json({{"name", "f"}, {"arguments", "{}"}}));
  const json first = legacy_function_delta(
      {{"tool_calls", {{{"index", 0}, {"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", ""}}}}}}});
  EXPECT_EQ(first, json({{"function_call", {{"name", "f"}, {"arguments", ""}}}}));
  EXPECT_EQ(legacy_function_delta({{"tool_calls", {{{"index", 1}, {"function", {{"arguments", "{"}}}}}}}), json::object());
}

TEST(StrictRequests, ModelIsRequiredAndNullOnlyWhereTheSchemaAllowsIt) {
  // CreateChatCompletionRequest / CreateEmbeddingRequest: required [model, ...].
  json no_model = chat();
  no_model.erase("model");
  ApiError e = check_model_and_nulls(no_model, Endpoint::Chat, /*strict=*/true);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "model");
  EXPECT_EQ(e.message, "you must provide a model parameter");
  EXPECT_EQ(check_model_and_nulls(json{{"input", "Hi"}}, Endpoint::Embeddings, true).param, "model");
  EXPECT_TRUE(check_model_and_nulls(no_model, Endpoint::Chat, /*strict=*/false).ok());
  // user: type string; tools: type array; dimensions: type integer (none of them nullable).
  EXPECT_EQ(check_model_and_nulls(chat({{"user", nullptr}}), Endpoint::Chat, true).param, "user");
  EXPECT_EQ(check_model_and_nulls(chat({{"tools", nullptr}}), Endpoint::Chat, true).param, "tools");
  EXPECT_EQ(check_model_and_nulls(json{{"model", "m"}, {"input", "Hi"}, {"dimensions", nullptr}},
                                  Endpoint::Embeddings, true).param,
            "dimensions");
  EXPECT_EQ(check_model_and_nulls(chat({{"model", nullptr}}), Endpoint::Chat, true).param, "model");
  // temperature, stop, seed: nullable: true; completions suffix: nullable.
  EXPECT_TRUE(check_model_and_nulls(chat({{"temperature", nullptr}, {"stop", nullptr}, {"seed", nullptr}}),
                                    Endpoint::Chat, true).ok());
  EXPECT_TRUE(check_model_and_nulls(completion({{"suffix", nullptr}}), Endpoint::Completions, true).ok());
  // Lenient: a null is read as absent.
  EXPECT_TRUE(check_model_and_nulls(chat({{"user", nullptr}}), Endpoint::Chat, false).ok());
}
