// A plain generation request becomes a ServeRequest: the value rules every
// front end shares, the chat template, tokenization, the limits and the
// grammar, with errors that name the field.
#include <gtest/gtest.h>

#include "serving/conversation.h"
#include "serving/generation_checks.h"
#include "serving/prepare_generation.h"

using namespace stride;
using namespace stride::serving;

namespace {

// One token per byte: prompt lengths are text lengths.
class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool, bool) const override {
    return std::vector<int32_t>(text.begin(), text.end());
  }
  std::vector<int32_t> encode_with_literals(std::string_view text, const std::vector<TextSpan>&, bool) const override {
    return encode(text, false, true);
  }
  std::string token_to_piece(int32_t id) const override { return std::string(1, (char)id); }
  int n_vocab() const override { return 256; }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return 0; }
  bool add_bos_default() const override { return false; }
  bool is_eog(int32_t id) const override { return id == 0; }
  bool is_special(int32_t) const override { return false; }
};

struct Fixture {
  Fixture() {
    cfg.max_context_length = 4096;
    cfg.max_prompt_tokens = 4080;
    cfg.max_tokens_cap = 32;
  }
  PrepareContext ctx() const { return {&cfg, &tok, &chat, tok.n_vocab()}; }
  ServeConfig cfg;
  ByteTokenizer tok;
  Expected<ChatTemplate> chat = ChatTemplate(ChatFamily::ChatML);
};

GenerationRequest text(const std::string& t) {
  GenerationRequest g;
  g.text = t;
  return g;
}

}  // namespace

TEST(PrepareGeneration, TextPrompt) {
  Fixture f;
  GenerationRequest g = text("hello");
  g.stop = {"", "\n"};
  g.sampling.temperature = 0.0f;
  PreparedGeneration p;
  ASSERT_TRUE(prepare_generation(g, f.ctx(), p).ok());
  EXPECT_EQ(p.req.prompt.size(), 5u);
  EXPECT_EQ(p.prompt_text, "hello");
  EXPECT_EQ(p.req.max_tokens, 16);  // a completion's default
  EXPECT_EQ(p.req.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(p.req.sampling.temperature, 0.0f);
  EXPECT_FALSE(p.req.grammar);
}

TEST(PrepareGeneration, ChatUsesTheRoomLeft) {
  Fixture f;
  GenerationRequest g;
  g.prompt = GenerationRequest::Prompt::Chat;
  g.messages.push_back({"user", "Hi"});
  PreparedGeneration p;
  ASSERT_TRUE(prepare_generation(g, f.ctx(), p).ok());
  EXPECT_EQ(p.prompt_text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(p.req.max_tokens, 32);
}

TEST(PrepareGeneration, ErrorsNameTheField) {
  Fixture f;
  PreparedGeneration p;
  RequestError e = prepare_generation(text(""), f.ctx(), p);
  EXPECT_EQ(e.param, "prompt");
  EXPECT_EQ(e.message, "the prompt is empty");

  e = prepare_generation(text(std::string(4081, 'x')), f.ctx(), p);
  EXPECT_EQ(e.kind, RequestError::Kind::TooLong);
  EXPECT_EQ(e.code, "prompt_too_long");

  GenerationRequest g = text("hello");
  g.max_tokens = 33;
  e = prepare_generation(g, f.ctx(), p);
  EXPECT_EQ(e.message, "'max_tokens' exceeds the server cap of 32");
  g = text(std::string(4070, 'x'));
  g.max_tokens = 30;
  EXPECT_EQ(prepare_generation(g, f.ctx(), p).code, "context_length_exceeded");

  // Float ranges: checked by the front end (check_generation, or the HTTP
  // reader on the JSON number), not again once narrowed to float.
  g = text("hello");
  g.sampling.top_p = 1.5f;  // OpenAI's range is [0, 1]; 0 is greedy
  e = check_generation(g, f.cfg.max_context_length, 256);
  EXPECT_EQ(e.param, "top_p");
  EXPECT_EQ(e.message, "'top_p' must be a finite number in [0, 1]");
  g.sampling.top_p = 1.0f;
  g.sampling.repeat_penalty = 0.01f;  // 0.01 as a float is just below 0.01
  EXPECT_EQ(check_generation(g, f.cfg.max_context_length, 256).param, "repetition_penalty");
  EXPECT_TRUE(prepare_generation(g, f.ctx(), p).ok());

  g = text("hello");
  g.stop.assign(kMaxStopStrings + 1, "x");
  EXPECT_EQ(prepare_generation(g, f.ctx(), p).param, "stop");

  g = GenerationRequest{};
  g.prompt = GenerationRequest::Prompt::Tokens;
  g.tokens = {1, 256};
  EXPECT_EQ(prepare_generation(g, f.ctx(), p).message, "token ids must be integers in [0, 256)");
  g.tokens.clear();
  EXPECT_EQ(prepare_generation(g, f.ctx(), p).param, "prompt");
}

TEST(PrepareGeneration, Grammars) {
  Fixture f;
  GenerationRequest g = text("hello");
  g.grammar.gbnf = "root ::= \"yes\" | \"no\"";
  PreparedGeneration p;
  ASSERT_TRUE(prepare_generation(g, f.ctx(), p).ok());
  EXPECT_TRUE(p.req.grammar);

  g.grammar.gbnf = "root ::= undefined-rule";
  RequestError e = prepare_generation(g, f.ctx(), p);
  EXPECT_EQ(e.param, "grammar");
  EXPECT_EQ(e.code, "invalid_grammar");

  GenerationRequest chat;
  chat.prompt = GenerationRequest::Prompt::Chat;
  chat.messages.push_back({"user", "Weather?"});
  chat.tools.tools.push_back({"get_weather", "", R"({"type": "object", "properties": {}})", false});
  chat.tools.choice.mode = ToolChoiceMode::Required;
  PreparedGeneration tp;
  ASSERT_TRUE(prepare_generation(chat, f.ctx(), tp).ok());
  EXPECT_TRUE(tp.req.grammar);  // the calls' grammar
  EXPECT_NE(tp.prompt_text.find("get_weather"), std::string::npos);  // described in the system turn
  chat.grammar.gbnf = "root ::= \"x\"";
  EXPECT_EQ(prepare_generation(chat, f.ctx(), tp).param, "tools");
}

TEST(PrepareGeneration, ToolPartsInTheGenericFormat) {
  ToolCallNames names;
  ClientMessage call{"assistant", ""};
  call.tool_calls.push_back({"call_1", "get_weather", R"({"city": "Paris"})"});
  ChatMessage a{"assistant", ""};
  add_tool_parts(call, ToolFormat::Generic, names, a);
  EXPECT_EQ(a.content, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})");
  ClientMessage result{"tool", "18 C"};
  result.tool_call_id = "call_1";
  ChatMessage r{"tool", "18 C"};
  add_tool_parts(result, ToolFormat::Generic, names, r);
  EXPECT_EQ(r.role, "user");
  EXPECT_EQ(r.content, R"({"tool_result": {"id": "call_1", "name": "get_weather", "content": "18 C"}})");
}
