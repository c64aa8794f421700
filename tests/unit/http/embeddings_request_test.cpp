// POST /v1/embeddings bodies: every input shape, every limit, every wrong type.
#include <gtest/gtest.h>

#include "http/embeddings_request.h"

namespace stride::server {
namespace {

using json = nlohmann::json;

EmbeddingsContext context() {
  EmbeddingsContext c;
  c.model_id = "m";
  c.model_names = {"m"};
  // One token per byte: enough to count tokens without a real tokenizer.
  c.encode = [](const std::string& s) { return std::vector<int32_t>(s.begin(), s.end()); };
  c.n_vocab = 256;
  c.n_embd = 8;
  c.max_input_tokens = 10;
  c.max_inputs = 3;
  c.max_total_tokens = 20;
  return c;
}

// The body with the served model named (CreateEmbeddingRequest: required [input, model]) unless it names one.
ApiError parse(const json& body, EmbeddingsCall* out = nullptr) {
  EmbeddingsCall call;
  json named = body;
  if (named.is_object() && !named.contains("model")) named["model"] = "m";
  ApiError e = parse_embeddings(named, context(), call);
  if (out) *out = call;
  return e;
}

TEST(EmbeddingsRequest, AcceptsEveryInputShape) {
  EmbeddingsCall c;
  ASSERT_TRUE(parse({{"input", "abc"}}, &c).ok());
  EXPECT_EQ(c.inputs, (std::vector<std::vector<int32_t>>{{'a', 'b', 'c'}}));
  ASSERT_TRUE(parse({{"input", {"ab", "c"}}}, &c).ok());
  EXPECT_EQ(c.inputs.size(), 2u);
  ASSERT_TRUE(parse({{"input", {1, 2, 3}}}, &c).ok());
  EXPECT_EQ(c.inputs, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  ASSERT_TRUE(parse({{"input", json::array({json::array({1}), json::array({2, 3})})}, {"encoding_format", "base64"}, {"dimensions", 8}, {"model", "m"},
                     {"user", "u"}},
                    &c).ok());
  EXPECT_EQ(c.inputs.size(), 2u);
  EXPECT_TRUE(c.base64);
  // Neither encoding_format nor dimensions is nullable in the official schema.
  EXPECT_EQ(parse({{"input", "a"}, {"encoding_format", nullptr}}).param, "encoding_format");
  EXPECT_EQ(parse({{"input", "a"}, {"dimensions", nullptr}}).param, "dimensions");
}

TEST(EmbeddingsRequest, ModelIsRequired) {
  EmbeddingsCall call;
  const ApiError e = parse_embeddings(json{{"input", "a"}}, context(), call);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "model");
  EXPECT_EQ(parse({{"input", "a"}, {"model", nullptr}}).param, "model");
  EmbeddingsContext lenient = context();
  lenient.strict_requests = false;
  EXPECT_TRUE(parse_embeddings(json{{"input", "a"}}, lenient, call).ok());
}

TEST(EmbeddingsRequest, RefusesBadInputsNamingTheField) {
  const json bad[] = {
      json::object(),
      {{"input", ""}},
      {{"input", json::array()}},
      {{"input", json::array({json::array()})}},
      {{"input", {"a", 1}}},
      {{"input", {1, "a"}}},
      {{"input", json::array({json::array({1}), "a"})}},
      {{"input", {1.5}}},
      {{"input", {true}}},
      {{"input", 3}},
      {{"input", json::object({{"k", "v"}})}},
      {{"input", {-1}}},
      {{"input", {256}}},
      {{"input", {18446744073709551615ull}}},
      {{"input", "01234567890"}},                       // 11 tokens > 10
      {{"input", {"a", "b", "c", "d"}}},               // 4 inputs > 3
      {{"input", {"0123456789", "0123456789", "0"}}},  // 21 tokens in all > 20
  };
  for (const json& b : bad) {
    const ApiError e = parse(b);
    EXPECT_EQ(e.status, 400) << b.dump();
    EXPECT_EQ(e.param, "input") << b.dump();
  }
  EXPECT_EQ(parse({{"input", "a"}, {"encoding_format", "int8"}}).param, "encoding_format");
  EXPECT_EQ(parse({{"input", "a"}, {"encoding_format", 0}}).param, "encoding_format");
  EXPECT_EQ(parse({{"input", "a"}, {"dimensions", 4}}).param, "dimensions");
  EXPECT_TRUE(parse({{"input", "a"}, {"dimensions", 8.0}}).ok());  // an integer, in JSON Schema's terms
  EXPECT_EQ(parse({{"input", "a"}, {"dimensions", 8.5}}).param, "dimensions");
  // CreateEmbeddingRequest: additionalProperties false.
  EXPECT_EQ(parse({{"input", "a"}, {"dimension", 8}}).param, "dimension");
  EXPECT_EQ(parse({{"input", "a"}, {"dimensions", "8"}}).param, "dimensions");
  EXPECT_EQ(parse({{"input", "a"}, {"user", 1}}).param, "user");
  EXPECT_EQ(parse({{"input", "a"}, {"model", 1}}).param, "model");
  EXPECT_EQ(parse({{"input", "a"}, {"model", "other"}}).status, 404);
  EXPECT_EQ(parse(json::array()).status, 400);
}

TEST(EmbeddingsRequest, Base64IsLittleEndianFloat32) {
  // 1.0f = 0x3F800000 -> bytes 00 00 80 3F; -2.0f = 0xC0000000 -> 00 00 00 C0.
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(base64_floats({}), "");
}

TEST(EmbeddingsRequest, ResponseShape) {
  const json r = embeddings_json({{0.5f, 1.0f}, {2.0f, 0.0f}}, false, "m", 7);
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "m");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(r["usage"]["total_tokens"], 7);
  ASSERT_EQ(r["data"].size(), 2u);
  EXPECT_EQ(r["data"][1]["index"], 1);
  EXPECT_EQ(r["data"][1]["object"], "embedding");
  EXPECT_EQ(r["data"][0]["embedding"][0].get<double>(), 0.5);
  EXPECT_EQ(embeddings_json({{1.0f}}, true, "m", 1)["data"][0]["embedding"], "AACAPw==");
}

}  // namespace
}  // namespace stride::server
