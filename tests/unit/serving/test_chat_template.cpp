// Chat template detection and rendering against hand-written expected prompts.
#include <gtest/gtest.h>

#include "serving/chat_template.h"

using namespace stride::serving;

namespace {
const char* kSmolTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
}

TEST(ChatTemplate, SmolLM2ChatMLWithDefaultSystem) {
  auto t = detect_chat_template(kSmolTemplate, "llama");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->family, ChatFamily::ChatML);
  EXPECT_EQ(t->default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  auto p = render_chat(*t, {{"user", "Hi"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  auto with_sys = render_chat(*t, {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}});
  ASSERT_TRUE(with_sys.ok());
  EXPECT_EQ(*with_sys,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, GemmaFallbackByArchitecture) {
  auto t = detect_chat_template("", "gemma3");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->family, ChatFamily::Gemma);
  auto p = render_chat(*t, {{"system", "Sys."}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Again"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p,
            "<start_of_turn>user\nSys.\n\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n"
            "<start_of_turn>user\nAgain<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_FALSE(render_chat(*t, {{"assistant", "first"}}).ok());
}

TEST(ChatTemplate, FamiliesByMarker) {
  EXPECT_EQ(detect_chat_template("{{'<|start_header_id|>' + role}}", "llama")->family, ChatFamily::Llama3);
  EXPECT_EQ(detect_chat_template("[INST] <<SYS>>", "llama")->family, ChatFamily::Llama2);
  EXPECT_EQ(detect_chat_template("{{ '[INST] ' + content + ' [/INST]' }}", "llama")->family, ChatFamily::Mistral);
  EXPECT_EQ(detect_chat_template("<|user|>x<|end|><|assistant|>", "phi3")->family, ChatFamily::Phi3);
  // A template of no known family that does not render the messages is refused;
  // one that does is run by the Jinja engine (test_chat_jinja.cpp).
  EXPECT_TRUE(detect_chat_template("{{ messages | tojson }}", "llama").ok());
  auto unknown = detect_chat_template("{{ 'no messages here' }}", "llama");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown chat template"), std::string::npos);
  EXPECT_FALSE(detect_chat_template("", "llama").ok());
}

TEST(ChatTemplate, Llama3AndLlama2Rendering) {
  ChatTemplate l3{ChatFamily::Llama3, ""};
  EXPECT_EQ(*render_chat(l3, {{"system", "S"}, {"user", "U"}}),
            "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  ChatTemplate l2{ChatFamily::Llama2, ""};
  EXPECT_EQ(*render_chat(l2, {{"system", "S"}, {"user", "U"}, {"assistant", "A"}, {"user", "V"}}),
            "[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A</s>[INST] V [/INST]");
  EXPECT_FALSE(render_chat(l2, {{"tool", "x"}}).ok());
}
