// Model replies read as tool calls and channels (server/tool_reply.h): a
// reply is text the model wrote from a client's prompt, so every format's
// reader must take any bytes. For each format, the whole reply and the
// streamed deltas over cut points never crash, the reader's bounds stay
// inside what it read, and streaming only ever extends what it sent.
//
// Input: byte 0 picks the format (mod the number of formats), the rest is
// the reply; its bytes also pick the streaming cut points.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "http/tool_reply.h"

namespace {

using namespace stride;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_tool_reply: %s\n", what);
  std::abort();
}

constexpr serving::ToolFormat kFormats[] = {serving::ToolFormat::Generic,     serving::ToolFormat::Hermes,
                                            serving::ToolFormat::Llama3,      serving::ToolFormat::MistralJson,
                                            serving::ToolFormat::MistralArgs, serving::ToolFormat::Harmony};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (64 << 10)) return 0;
  const serving::ToolFormat format = kFormats[data[0] % (sizeof kFormats / sizeof kFormats[0])];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);

  const serving::ToolCallScan scan = server::scan_reply(format, text);
  const size_t content_size = scan.channels ? scan.content.size() : text.size();
  if (scan.content_safe > scan.content_end || scan.content_end > content_size) fail("content bounds");
  if (scan.reasoning_safe > scan.reasoning.size()) fail("reasoning bounds");

  nlohmann::json completion = {{"choices", {{{"message", {{"content", text}}}, {"finish_reason", "stop"}}}}};
  server::apply_tool_calls(completion, text, format);
  (void)completion.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  server::ToolReplyStream stream(format);
  std::string sent_content, sent_reasoning;
  size_t cut = 0;
  for (size_t i = 0; i < text.size(); i += 1 + (unsigned char)text[i] % 7) {
    cut = i;
    for (const nlohmann::json& d : stream.update(text.substr(0, cut))) {
      if (d.contains("content")) sent_content += d["content"].get<std::string>();
      if (d.contains("reasoning_content")) sent_reasoning += d["reasoning_content"].get<std::string>();
    }
  }
  std::string finish = "stop";
  for (const nlohmann::json& d : stream.finish(text, finish)) {
    if (d.contains("content")) sent_content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) sent_reasoning += d["reasoning_content"].get<std::string>();
  }
  // Reasoning streamed is the reasoning of the whole reply.
  if (scan.channels && sent_reasoning != scan.reasoning) fail("streamed reasoning differs");
  return 0;
}
