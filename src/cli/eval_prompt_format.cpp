#include "cli/eval_prompt_format.h"

#include <cstdio>

#include "loader/chat_template_source.h"
#include "serving/chat_template.h"

namespace stride::cli {

// Completion style, or the model's chat template (`label` names which).
Expected<PromptFormat> prompt_format(Engine& engine, const std::string& mode, std::string& label) {
  label = "off";
  if (mode == "off") return PromptFormat::completion();
  if (mode != "auto" && mode != "on") return InvalidArgument("--chat must be auto, on or off, not '" + mode + "'");
  const ModelSource& source = engine.model().source();
  STRIDE_ASSIGN_OR_RETURN(const std::string tmpl, model_chat_template(source));
  const std::string arch = source.gguf() ? source.gguf()->get_string_or("general.architecture", "")
                                         : arch_name(source.config.arch);
  if (mode == "auto" && tmpl.empty()) return PromptFormat::completion();
  const serving::ChatTokens tokens =
      engine.tokenizer() ? serving::chat_tokens_of(*engine.tokenizer()) : serving::ChatTokens{};
  Expected<serving::ChatTemplate> t = serving::detect_chat_template(tmpl, arch, tokens);
  if (!t) {
    if (mode == "on") return t.status();
    std::fprintf(stderr, "eval: %s; using completion prompts\n", t.status().message().c_str());
    return PromptFormat::completion();
  }
  label = serving::chat_template_name(*t);
  return PromptFormat::chat([tmpl = *t](const std::string& user) -> Expected<RenderedPrompt> {
    STRIDE_ASSIGN_OR_RETURN(serving::RenderedChat c, serving::render_chat_marked(tmpl, {{"user", user}}));
    return RenderedPrompt{std::move(c.text), std::move(c.literal)};
  });
}

}  // namespace stride::cli
