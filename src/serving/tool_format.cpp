#include "serving/tool_format.h"

namespace stride::serving {

const char* tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::Generic: return "generic";
    case ToolFormat::Hermes: return "hermes";
    case ToolFormat::Llama3: return "llama3";
    case ToolFormat::MistralJson: return "mistral";
    case ToolFormat::MistralArgs: return "mistral-args";
    case ToolFormat::Harmony: return "harmony";
  }
  return "generic";
}

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

ToolFormat detect_tool_format(const std::string& source) {
  // <tool_call> alone is not enough: GLM and Qwen3-Coder write XML-style
  // arguments inside it (<arg_key>, <function=...>), not a JSON object.
  if (has(source, "<|channel|>") && has(source, "<|message|>") && has(source, "<|start|>")) return ToolFormat::Harmony;
  if (has(source, "[TOOL_CALLS]")) return has(source, "[ARGS]") ? ToolFormat::MistralArgs : ToolFormat::MistralJson;
  const bool json_calls = has(source, "{\"name\"") || has(source, "{\\\"name\\\"");
  const bool xml_calls = has(source, "<function=") || has(source, "<arg_key>");
  if (has(source, "tools") && has(source, "<tool_call>") && json_calls && !xml_calls) return ToolFormat::Hermes;
  if (has(source, "tools") && has(source, "ipython") && has(source, "\"parameters\": ")) return ToolFormat::Llama3;
  return ToolFormat::Generic;
}

std::vector<std::string> tool_format_control_texts(ToolFormat f) {
  switch (f) {
    case ToolFormat::MistralJson: return {"[TOOL_CALLS]"};
    case ToolFormat::MistralArgs: return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
    case ToolFormat::Harmony: return {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>"};
    default: return {};
  }
}

}  // namespace stride::serving
