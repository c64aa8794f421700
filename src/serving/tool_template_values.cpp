#include "serving/tool_template_values.h"

#include "jinja/json.h"

namespace stride::serving {

using ojson = nlohmann::ordered_json;

jinja::Value tools_template_value(const ojson& tools) { return jinja::from_json(tools, /*client=*/true); }

jinja::Value tool_calls_template_value(const std::vector<ToolCall>& calls) {
  ojson list = ojson::array();
  for (const ToolCall& c : calls) {
    ojson args = ojson::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded() || !args.is_object()) args = c.arguments;
    ojson call = ojson::object();
    if (!c.id.empty()) call["id"] = c.id;
    call["type"] = "function";
    call["function"] = {{"name", c.name}, {"arguments", std::move(args)}};
    list.push_back(std::move(call));
  }
  return jinja::from_json(list, /*client=*/true);
}

}  // namespace stride::serving
