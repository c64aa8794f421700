#include "jinja/template.h"

#include <new>

#include "jinja/error.h"
#include "jinja/json.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/renderer.h"

namespace stride::jinja {

struct Program {
  Body body;
};

namespace {

Status to_status(const JinjaError& e) {
  switch (e.kind) {
    case ErrorKind::Syntax: return InvalidArgument(std::string("chat template syntax error: ") + e.what());
    case ErrorKind::Raised: return InvalidArgument(e.what());
    case ErrorKind::Limit: return ResourceExhausted(std::string("chat template: ") + e.what());
    case ErrorKind::Runtime: break;
  }
  return InvalidArgument(std::string("chat template error: ") + e.what());
}

}  // namespace

Template::Template(std::unique_ptr<Program> p) : program_(std::move(p)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

Expected<Template> Template::parse(std::string_view source) {
  try {
    auto program = std::make_unique<Program>();
    program->body = jinja::parse(tokenize(source));
    return Template(std::move(program));
  } catch (const JinjaError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("chat template: out of memory while parsing");
  } catch (const std::exception& e) {
    return Internal(std::string("chat template: ") + e.what());
  }
}

Expected<Rendered> Template::render(const Value& context, const RenderOptions& options) const {
  try {
    Renderer r(options, context);
    return r.run(program_->body);
  } catch (const JinjaError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("chat template: out of memory while rendering");
  } catch (const std::exception& e) {
    return Internal(std::string("chat template: ") + e.what());
  }
}

template <typename J>
static Value build_context(const J& client, const std::vector<std::pair<std::string, Value>>& server_values) {
  DictData d;
  try {
    if (client.is_object()) {
      Value c = from_json(client, /*client=*/true);
      d = c.as_dict();
    }
  } catch (const JinjaError&) {
    d = DictData{};
  }
  for (const auto& [k, v] : server_values) d.set(k, v);
  return Value::dict(std::move(d));
}

Value context_from_json(const nlohmann::ordered_json& client,
                        const std::vector<std::pair<std::string, Value>>& server_values) {
  return build_context(client, server_values);
}

Value context_from_json(const nlohmann::json& client,
                        const std::vector<std::pair<std::string, Value>>& server_values) {
  return build_context(client, server_values);
}

}  // namespace stride::jinja
