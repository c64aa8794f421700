#include "http/openai_fields.h"

#include <algorithm>

#include "http/log.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

// The properties of OpenAI's request schemas (openapi.yml, API 2.3.0).
constexpr const char* kChatOpenAI[] = {
    "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
    "max_tokens", "messages", "metadata", "modalities", "model", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "response_format",
    "safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options", "temperature",
    "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options"};
constexpr const char* kCompletionsOpenAI[] = {
    "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "model", "n", "presence_penalty",
    "prompt", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user"};
constexpr const char* kResponsesOpenAI[] = {
    "background", "context_management", "conversation", "include", "input", "instructions", "max_output_tokens",
    "max_tool_calls", "metadata", "model", "parallel_tool_calls", "previous_response_id", "prompt",
    "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store",
    "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p",
    "truncation", "user"};
constexpr const char* kEmbeddingsOpenAI[] = {"dimensions", "encoding_format", "input", "model", "user"};

// Extensions (docs/serving.md and docs/openapi.yaml describe each).
// Sampling knobs of llama.cpp and vLLM, speculative decoding, the attention
// policy, grammars, saved sessions; chat: template variables and vLLM's
// add_generation_prompt, and best_of/echo as on completions; completions:
// response_format and parse_special, and `tools` (refused there with a
// message that points at chat); responses: seed.
constexpr const char* kChatExtensions[] = {
    "add_generation_prompt", "attention", "best_of", "chat_template_kwargs", "echo", "grammar", "ignore_eos",
    "min_p", "repetition_penalty", "session", "speculative", "top_k"};
constexpr const char* kResponsesExtensions[] = {"seed"};
constexpr const char* kCompletionsExtensions[] = {
    "attention", "grammar", "ignore_eos", "min_p", "parse_special", "repetition_penalty", "response_format",
    "session", "speculative", "tools", "top_k"};

template <size_t N>
std::span<const char* const> span_of(const char* const (&a)[N]) {
  return {a, N};
}

bool listed(std::span<const char* const> list, std::string_view key) {
  return std::any_of(list.begin(), list.end(), [&](const char* k) { return key == k; });
}

// Characters of UTF-8 text (OpenAI's metadata limits count characters).
size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += ((unsigned char)c & 0xC0) != 0x80;
  return n;
}

}  // namespace

const char* endpoint_path(Endpoint e) {
  switch (e) {
    case Endpoint::Chat: return "/v1/chat/completions";
    case Endpoint::Completions: return "/v1/completions";
    case Endpoint::Responses: return "/v1/responses";
    case Endpoint::Embeddings: return "/v1/embeddings";
  }
  return "";
}

std::span<const char* const> openai_fields(Endpoint e) {
  switch (e) {
    case Endpoint::Chat: return span_of(kChatOpenAI);
    case Endpoint::Completions: return span_of(kCompletionsOpenAI);
    case Endpoint::Responses: return span_of(kResponsesOpenAI);
    case Endpoint::Embeddings: return span_of(kEmbeddingsOpenAI);
  }
  return {};
}

std::span<const char* const> extension_fields(Endpoint e) {
  switch (e) {
    case Endpoint::Chat: return span_of(kChatExtensions);
    case Endpoint::Completions: return span_of(kCompletionsExtensions);
    case Endpoint::Responses: return span_of(kResponsesExtensions);
    case Endpoint::Embeddings: break;
  }
  return {};
}

bool known_field(Endpoint e, std::string_view key) {
  return listed(openai_fields(e), key) || listed(extension_fields(e), key);
}

ApiError check_unknown_fields(const json& body, Endpoint e, bool strict) {
  if (!body.is_object()) return {};
  for (const auto& [key, value] : body.items()) {
    if (known_field(e, key)) continue;
    if (strict) return bad_field(key, "Unrecognized request argument supplied: " + key);
    log(LogLevel::Warning, "unrecognized request field ignored (strict_requests is off)",
        {{"field", key}, {"endpoint", endpoint_path(e)}});
  }
  return {};
}

ApiError check_metadata(const json& body) {
  const json* md = Fields(body).find("metadata");
  if (!md) return {};
  if (!md->is_object()) return bad_field("metadata", "'metadata' must be an object of strings");
  if (md->size() > kMaxMetadataPairs) {
    return bad_field("metadata", "'metadata' holds at most " + std::to_string(kMaxMetadataPairs) + " pairs");
  }
  for (const auto& [k, v] : md->items()) {
    const std::string param = "metadata." + k;
    if (utf8_chars(k) > 64) return bad_field("metadata", "'metadata' keys are at most 64 characters");
    if (!v.is_string()) return bad_field(param, "'" + param + "' must be a string");
    if (utf8_chars(v.get_ref<const std::string&>()) > 512) {
      return bad_field(param, "'" + param + "' is longer than 512 characters");
    }
  }
  return {};
}

}  // namespace stride::server
