#include "serving/tool_format.h"

namespace stride::serving {

const char* tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::Generic: return "generic";
    case ToolFormat::Hermes: return "hermes";
    case ToolFormat::Llama3: return "llama3";
  }
  return "generic";
}

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

ToolFormat detect_tool_format(const std::string& source) {
  // <tool_call> alone is not enough: GLM and Qwen3-Coder write XML-style
  // arguments inside it (<arg_key>, <function=...>), not a JSON object.
  const bool json_calls = has(source, "{\"name\"") || has(source, "{\\\"name\\\"");
  const bool xml_calls = has(source, "<function=") || has(source, "<arg_key>");
  if (has(source, "tools") && has(source, "<tool_call>") && json_calls && !xml_calls) return ToolFormat::Hermes;
  if (has(source, "tools") && has(source, "ipython") && has(source, "\"parameters\": ")) return ToolFormat::Llama3;
  return ToolFormat::Generic;
}

}  // namespace stride::serving
