#include "http/tool_reply.h"

#include <random>

#include "http/legacy_functions.h"
#include "serving/tool_call_scan.h"
#include "serving/tool_format_harmony.h"
#include "serving/tool_format_hermes.h"
#include "serving/tool_format_llama3.h"
#include "serving/tool_format_mistral.h"

namespace stride::server {

namespace {

using json = nlohmann::json;
using serving::ToolCallScan;

// The length of the longest prefix of s[from, end) that ends on a whole UTF-8
// character, so that a fragment never splits one.
size_t utf8_whole(const std::string& s, size_t from) {
  size_t end = s.size();
  size_t back = 0;
  while (end > from && back < 4 && ((unsigned char)s[end - 1] & 0xC0) == 0x80) {
    --end;
    ++back;
  }
  if (end > from) {
    const unsigned char lead = (unsigned char)s[end - 1];
    const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need > back + 1) return end - 1 - from;  // the last character is cut
  }
  return s.size() - from;
}

// Complete calls are "tool_calls" even when the last token was the last one
// max_tokens allowed; timeouts and cancellations keep their reason.
bool ends_in_calls(bool complete, const std::string& finish_reason) {
  return complete && (finish_reason == "stop" || finish_reason == "length");
}

bool holds_calls(const ToolCallScan& scan) {
  return scan.kind == ToolCallScan::Kind::Calls && scan.valid && !scan.calls.empty() && scan.calls[0].name_done;
}

json call_json(const std::string& id, const serving::ScannedCall& c) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

}  // namespace

std::string new_tool_call_id() {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

ToolCallScan scan_reply(serving::ToolFormat format, const std::string& text) {
  switch (format) {
    case serving::ToolFormat::Hermes: return serving::scan_hermes_calls(text);
    case serving::ToolFormat::Llama3: return serving::scan_llama3_calls(text);
    case serving::ToolFormat::MistralJson: return serving::scan_mistral_calls(text, false);
    case serving::ToolFormat::MistralArgs: return serving::scan_mistral_calls(text, true);
    case serving::ToolFormat::Harmony: return serving::scan_harmony_reply(text);
    case serving::ToolFormat::Generic: break;
  }
  return serving::scan_tool_calls(text);
}

namespace {

// The content part of a reply: its text before the calls, or (channels) its decoded content.
const std::string& content_source(const ToolCallScan& scan, const std::string& text) {
  return scan.channels ? scan.content : text;
}

}  // namespace

void apply_tool_calls(json& completion, const std::string& text, serving::ToolFormat format, bool tools,
                      bool legacy) {
  const ToolCallScan scan = scan_reply(format, text);
  json& choice = completion["choices"][0];
  if (scan.channels) {
    choice["message"]["content"] = scan.content;
    if (!scan.reasoning.empty()) choice["message"]["reasoning_content"] = scan.reasoning;
  }
  if (!tools || !holds_calls(scan)) return;
  json calls = json::array();
  for (const auto& c : scan.calls) {
    if (c.name_done) calls.push_back(call_json(new_tool_call_id(), c));
  }
  const std::string content = content_source(scan, text).substr(0, scan.content_end);
  const bool blank = content.find_first_not_of(" \t\r\n") == std::string::npos;
  choice["message"]["content"] = blank ? json(nullptr) : json(content);
  choice["message"]["tool_calls"] = std::move(calls);
  if (ends_in_calls(scan.complete, choice["finish_reason"].get<std::string>())) {
    choice["finish_reason"] = "tool_calls";
  }
  if (legacy) use_legacy_function_call(completion);
}

std::vector<json> ToolReplyStream::shaped(std::vector<json> deltas) const {
  if (!legacy_) return deltas;
  std::vector<json> out;
  for (const json& d : deltas) {
    json l = legacy_function_delta(d);
    if (!l.empty()) out.push_back(std::move(l));
  }
  return out;
}

// Content up to `end` (bytes of the reply), never splitting a character
// unless `final`.
std::vector<json> ToolReplyStream::text_deltas(const std::string& text, size_t end, bool final) {
  if (end <= text_sent_) return {};
  const std::string part = text.substr(0, end);
  const size_t n = final ? part.size() - text_sent_ : utf8_whole(part, text_sent_);
  if (n == 0) return {};
  json d = {{"content", part.substr(text_sent_, n)}};
  text_sent_ += n;
  return {d};
}

std::vector<json> ToolReplyStream::call_deltas(const ToolCallScan& scan, bool final) {
  std::vector<json> out;
  if (scan.kind != ToolCallScan::Kind::Calls || !scan.valid) return out;
  for (size_t i = 0; i < scan.calls.size(); ++i) {
    const serving::ScannedCall& c = scan.calls[i];
    if (i == ids_.size()) {
      if (!c.name_done) break;
      ids_.push_back(new_tool_call_id());
      args_sent_.push_back(0);
      json first = call_json(ids_[i], c);
      first["function"]["arguments"] = "";
      first["index"] = i;
      out.push_back({{"tool_calls", json::array({first})}});
    }
    // A reply the grammar did not write may take back what it seemed to say
    // (a "parameters" key, then "arguments"): what went out stays out.
    if (args_sent_[i] > c.arguments.size()) continue;
    const size_t n = final ? c.arguments.size() - args_sent_[i] : utf8_whole(c.arguments, args_sent_[i]);
    if (n == 0) continue;
    json part = {{"index", i}, {"function", {{"arguments", c.arguments.substr(args_sent_[i], n)}}}};
    args_sent_[i] += n;
    out.push_back({{"tool_calls", json::array({part})}});
  }
  return out;
}

std::vector<json> ToolReplyStream::reasoning_deltas(const ToolCallScan& scan, bool final) {
  if (!scan.channels || scan.reasoning_safe <= reasoning_sent_) return {};
  const std::string part = scan.reasoning.substr(0, scan.reasoning_safe);
  const size_t n = final ? part.size() - reasoning_sent_ : utf8_whole(part, reasoning_sent_);
  if (n == 0) return {};
  json d = {{"reasoning_content", part.substr(reasoning_sent_, n)}};
  reasoning_sent_ += n;
  return {d};
}

std::vector<json> ToolReplyStream::update(const std::string& text) {
  const ToolCallScan scan = scan_reply(format_, text);
  // Content that stays content whatever follows; calls once they are sure.
  std::vector<json> out = reasoning_deltas(scan, false);
  if (ids_.empty() || scan.channels) {
    for (json& d : text_deltas(content_source(scan, text), scan.content_safe, false)) out.push_back(std::move(d));
  }
  if (tools_)
    for (json& d : call_deltas(scan, false)) out.push_back(std::move(d));
  return shaped(std::move(out));
}

std::vector<json> ToolReplyStream::finish(const std::string& text, std::string& finish_reason) {
  const ToolCallScan scan = scan_reply(format_, text);
  std::vector<json> out = reasoning_deltas(scan, true);
  const std::string& content = content_source(scan, text);
  const bool calls = tools_ && scan.kind == ToolCallScan::Kind::Calls && scan.valid;
  if (ids_.empty() && !(calls && holds_calls(scan))) {
    // No call ever opened: the reply is text.
    for (json& d : text_deltas(content, scan.channels ? content.size() : text.size(), true)) out.push_back(std::move(d));
    return shaped(std::move(out));
  }
  if (ids_.empty() || scan.channels) {
    for (json& d : text_deltas(content, scan.content_end, true)) out.push_back(std::move(d));
  }
  for (json& d : call_deltas(scan, true)) out.push_back(std::move(d));
  if (calls && ends_in_calls(scan.complete, finish_reason)) finish_reason = legacy_ ? "function_call" : "tool_calls";
  return shaped(std::move(out));
}

}  // namespace stride::server
