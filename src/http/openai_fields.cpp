#include "http/openai_fields.h"

#include <algorithm>

#include "http/log.h"

namespace stride::server {

namespace {

using json = nlohmann::json;

// The properties of OpenAI's request schemas (openapi.yml, API 2.3.0), each
// with whether its schema allows null (nullable, type null, or anyOf with
// null). scripts/oracles/openai_request_fields.py prints this table from the
// spec; tests/python/server/test_strict_nulls.py checks the server against it.
constexpr OpenAIField kChatOpenAI[] = {
    {"audio", true}, {"frequency_penalty", true}, {"function_call", false}, {"functions", false},
    {"logit_bias", true}, {"logprobs", true}, {"max_completion_tokens", true}, {"max_tokens", true},
    {"messages", false}, {"metadata", true}, {"modalities", true}, {"model", false}, {"n", true},
    {"parallel_tool_calls", false}, {"prediction", true}, {"presence_penalty", true}, {"prompt_cache_key", false},
    {"prompt_cache_retention", true}, {"reasoning_effort", true}, {"response_format", false},
    {"safety_identifier", false}, {"seed", true}, {"service_tier", true}, {"stop", true}, {"store", true},
    {"stream", true}, {"stream_options", true}, {"temperature", true}, {"tool_choice", false}, {"tools", false},
    {"top_logprobs", false}, {"top_p", true}, {"user", false}, {"verbosity", true}, {"web_search_options", false}};
constexpr OpenAIField kCompletionsOpenAI[] = {
    {"best_of", true}, {"echo", true}, {"frequency_penalty", true}, {"logit_bias", true}, {"logprobs", true},
    {"max_tokens", true}, {"model", false}, {"n", true}, {"presence_penalty", true}, {"prompt", true},
    {"seed", true}, {"stop", true}, {"stream", true}, {"stream_options", true}, {"suffix", true},
    {"temperature", true}, {"top_p", true}, {"user", false}};
constexpr OpenAIField kResponsesOpenAI[] = {
    {"background", true}, {"context_management", true}, {"conversation", true}, {"include", true},
    {"input", false}, {"instructions", true}, {"max_output_tokens", true}, {"max_tool_calls", true},
    {"metadata", true}, {"model", false}, {"parallel_tool_calls", true}, {"previous_response_id", true},
    {"prompt", true}, {"prompt_cache_key", false}, {"prompt_cache_retention", true}, {"reasoning", true},
    {"safety_identifier", false}, {"service_tier", true}, {"store", true}, {"stream", true},
    {"stream_options", true}, {"temperature", true}, {"text", false}, {"tool_choice", false}, {"tools", false},
    {"top_logprobs", false}, {"top_p", true}, {"truncation", true}, {"user", false}};
constexpr OpenAIField kEmbeddingsOpenAI[] = {
    {"dimensions", false}, {"encoding_format", false}, {"input", false}, {"model", false}, {"user", false}};

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

template <typename T, size_t N>
std::span<const T> span_of(const T (&a)[N]) {
  return {a, N};
}

const OpenAIField* openai_field(Endpoint e, std::string_view key) {
  for (const OpenAIField& f : openai_fields(e)) {
    if (key == f.name) return &f;
  }
  return nullptr;
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

std::span<const OpenAIField> openai_fields(Endpoint e) {
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
  return openai_field(e, key) != nullptr || listed(extension_fields(e), key);
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

ApiError check_model_and_nulls(const json& body, Endpoint e, bool strict) {
  if (!body.is_object()) return {};
  for (const auto& [key, value] : body.items()) {
    if (!value.is_null()) continue;
    const OpenAIField* f = openai_field(e, key);
    if (!f || f->nullable) continue;
    if (strict) return bad_field(key, "'" + key + "' must not be null; leave it out for its default");
    log(LogLevel::Warning, "null request field read as absent (strict_requests is off)",
        {{"field", key}, {"endpoint", endpoint_path(e)}});
  }
  if (strict && !body.contains("model")) return bad_field("model", "you must provide a model parameter");
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
