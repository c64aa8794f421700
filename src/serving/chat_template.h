#pragma once
// Chat templates: the family is detected from the GGUF's tokenizer.chat_template
// (as llama.cpp's llm_chat_detect_template does, by marker strings) and each
// family has its own small renderer. No Jinja interpreter.
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/special_split.h"

namespace stride::serving {

enum class ChatFamily { ChatML, Llama3, Llama2, Mistral, Gemma, Phi3 };
const char* chat_family_name(ChatFamily f);

struct ChatMessage {
  std::string role;     // system | user | assistant (developer is treated as system)
  std::string content;
};

struct ChatTemplate {
  ChatFamily family = ChatFamily::ChatML;
  std::string default_system;  // ChatML templates that insert a system turn when none is given
};

// `tmpl`: the GGUF template text (may be empty); `arch`: general.architecture,
// used when there is no template. NotFound / Unsupported with a clear message otherwise.
Expected<ChatTemplate> detect_chat_template(const std::string& tmpl, const std::string& arch);

// A rendered prompt and the byte ranges of it that came from the client
// (message contents): they are tokenized as plain text, never as control tokens.
struct RenderedChat {
  std::string text;
  std::vector<TextSpan> literal;
};

// The prompt text, ending with the assistant's turn opener. BOS is not included:
// the tokenizer adds it when the model asks for it.
Expected<RenderedChat> render_chat_marked(const ChatTemplate& t, const std::vector<ChatMessage>& messages);
// The text alone.
Expected<std::string> render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages);

}  // namespace stride::serving
