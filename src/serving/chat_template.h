#pragma once
// Chat templates. A GGUF's tokenizer.chat_template is run by the Jinja engine
// (src/jinja) when it parses and renders a probe conversation with the user's
// text in it. The family is also detected from marker strings (as llama.cpp's
// llm_chat_detect_template does), and each family has its own small renderer:
// the fallback when there is no template, when it does not parse or render,
// or when a request's render fails.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "jinja/value.h"
#include "serving/tool_format.h"
#include "tokenizer/special_split.h"

namespace stride::jinja {
class Template;
}
namespace stride {
class Tokenizer;
}

namespace stride::serving {

enum class ChatFamily { ChatML, Llama3, Llama2, Mistral, Gemma, Phi3 };
const char* chat_family_name(ChatFamily f);

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}

  std::string role;     // system | user | assistant (developer is treated as system); tool with a native tool format
  std::string content;
  // Native tool formats only (the template renders them): an assistant's
  // calls as OpenAI's list with arguments as objects, a tool result's
  // tool_call_id and name. Unset, the template does not see them.
  jinja::Value tool_calls;
  std::string tool_call_id;
  std::string name;
  // An assistant turn's reasoning, when the client sent it back; unset, the
  // template does not see it (templates test `"thinking" in message`).
  std::optional<std::string> thinking;
};

struct ChatTemplate {
  ChatTemplate() = default;
  explicit ChatTemplate(ChatFamily f, std::string system = {}) : family(f), default_system(std::move(system)) {}

  ChatFamily family = ChatFamily::ChatML;
  std::string default_system;  // ChatML templates that insert a system turn when none is given
  // The GGUF's own template, when it parses and renders. Shared: a parsed
  // template is immutable, and ChatTemplate is copied into requests and prompts.
  std::shared_ptr<const jinja::Template> jinja;
  bool has_family = true;  // false: no family matched, only `jinja` renders
  std::string bos_token;   // the texts the template sees as bos_token / eos_token
  std::string eos_token;
  bool drop_leading_bos = false;  // the tokenizer adds BOS: a rendered leading bos_token goes
  ToolFormat tool_format = ToolFormat::Generic;  // Hermes etc. only when `jinja` renders
};

// The special token texts a template may print.
struct ChatTokens {
  std::string bos;
  std::string eos;
  bool tokenizer_adds_bos = false;
};

// BOS / EOS as text ("<s>", "<|im_end|>"; empty where the vocabulary has
// none), and whether encoding adds BOS.
ChatTokens chat_tokens_of(const Tokenizer& tok);

// `tmpl`: the GGUF template text (may be empty); `arch`: general.architecture,
// used when there is no template. NotFound / Unsupported with a clear message otherwise.
Expected<ChatTemplate> detect_chat_template(const std::string& tmpl, const std::string& arch,
                                            const ChatTokens& tokens = {});
// "jinja", "jinja (chatml fallback)", or the family's name.
std::string chat_template_name(const ChatTemplate& t);

// A rendered prompt and the byte ranges of it that came from the client
// (message contents): they are tokenized as plain text, never as control tokens.
struct RenderedChat {
  std::string text;
  std::vector<TextSpan> literal;
};

// The prompt text, ending with the assistant's turn opener. BOS is not included:
// the tokenizer adds it when the model asks for it (a template's leading
// bos_token is removed).
// `extra`: a dict of further template variables (a request's
// chat_template_kwargs, client text), seen by the GGUF's template only; the
// server's messages, bos_token, eos_token and add_generation_prompt win.
// add_generation_prompt false: the prompt ends with the last message (a saved
// session that later turns continue); Llama 2 / Mistral have no opener to leave out.
Expected<RenderedChat> render_chat_marked(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                          const jinja::Value& extra = {}, bool add_generation_prompt = true);
// The text alone.
Expected<std::string> render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages);

}  // namespace stride::serving
