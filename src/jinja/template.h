#pragma once
// A Jinja2 template engine for the chat templates that GGUF files carry
// (tokenizer.chat_template), compatible with transformers' environment
// (Jinja2 3.1, trim_blocks, lstrip_blocks, loopcontrols, tojson,
// raise_exception, strftime_now). Templates and contexts are untrusted: every
// failure, including resource limits, is a Status; nothing throws out of here.
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "jinja/str.h"
#include "jinja/value.h"

namespace stride::jinja {

struct RenderOptions {
  size_t max_output_bytes = size_t{8} << 20;  // also caps every string built while rendering
  size_t max_iterations = size_t{1} << 20;    // loop iterations and items built, over the whole render
  size_t max_built_bytes = size_t{256} << 20;  // all strings built while rendering, together
  int max_call_depth = 48;                    // macro / caller nesting
  std::optional<std::tm> now;                 // strftime_now's clock; the local time when unset
};

struct Rendered {
  std::string text;
  std::vector<Span> literal;  // byte ranges of `text` that hold client text, sorted, disjoint
};

struct Program;

class Template {
 public:
  // InvalidArgument with the line on a syntax error; ResourceExhausted when nested too deeply.
  static Expected<Template> parse(std::string_view source);
  // `context`: a dict of the template's variables (messages, tools, bos_token, ...).
  // InvalidArgument on a template error (raise_exception's message is kept as is),
  // ResourceExhausted when a limit is hit.
  Expected<Rendered> render(const Value& context, const RenderOptions& options = {}) const;

  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  ~Template();

 private:
  explicit Template(std::unique_ptr<Program> p);
  std::unique_ptr<Program> program_;
};

// A context dict: `client` (a JSON object: messages, tools, chat_template_kwargs
// merged in) whose strings are all client text (see str.h), plus the server's
// own values (bos_token, eos_token, add_generation_prompt), which are not.
// A `client` that is not an object, or nests deeper than 512, gives an empty one.
Value context_from_json(const nlohmann::ordered_json& client,
                        const std::vector<std::pair<std::string, Value>>& server_values = {});
Value context_from_json(const nlohmann::json& client,
                        const std::vector<std::pair<std::string, Value>>& server_values = {});

}  // namespace stride::jinja
