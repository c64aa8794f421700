#pragma once
// Which top-level request fields each OpenAI endpoint knows, in one place:
// the fields of OpenAI's official schema (CreateChatCompletionRequest,
// CreateCompletionRequest, CreateResponse, CreateEmbeddingRequest) and
// stride's documented extensions (docs/serving.md, "Request fields").
// A field outside both is refused as OpenAI refuses it ("Unrecognized request
// argument supplied: NAME"), or, with strict_requests off (`--lenient`),
// logged and ignored. OpenAI fields that cannot change stride's result are
// type-checked and ignored; those that would and are not implemented are
// refused with a 400 naming them (http/openai_optional_fields.cpp).
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "http/json_fields.h"

namespace stride::server {

enum class Endpoint { Chat, Completions, Responses, Embeddings };

const char* endpoint_path(Endpoint e);

// A top-level property of OpenAI's request schema, and whether that schema
// allows null for it (where it does, null means the same as absent).
struct OpenAIField {
  const char* name;
  bool nullable;
};

// OpenAI's fields of the endpoint's request schema.
std::span<const OpenAIField> openai_fields(Endpoint e);
// stride's own (and vLLM/llama.cpp's) extensions the endpoint reads.
std::span<const char* const> extension_fields(Endpoint e);
bool known_field(Endpoint e, std::string_view key);

// Unknown top-level fields: the first is a 400 when `strict`; otherwise each
// is logged once (a warning naming it and the endpoint) and left unread.
ApiError check_unknown_fields(const nlohmann::json& body, Endpoint e, bool strict);

// What the official schema requires beyond types: `model` is present, and no
// OpenAI field is null where its schema does not allow null (a 400 naming
// it). With strict_requests off a null there is logged and read as absent,
// and a missing model means the served model.
ApiError check_model_and_nulls(const nlohmann::json& body, Endpoint e, bool strict);

// OpenAI's fields stride accepts without acting on them, because ignoring
// them cannot change what the caller gets (service_tier, user, metadata, ...):
// type-, enum- and bound-checked as the official schema says, then ignored.
ApiError check_ignored_fields(const nlohmann::json& body, Endpoint e);

// OpenAI's fields stride does not implement (audio output, predicted
// outputs, web search, stored completions): a 400 naming the field unless it
// is absent, null or a value that asks for nothing.
ApiError refuse_unimplemented(const nlohmann::json& body, Endpoint e);

// OpenAI's metadata rules: null, or an object of at most 16 string values,
// keys at most 64 characters, values at most 512.
ApiError check_metadata(const nlohmann::json& body);

constexpr size_t kMaxMetadataPairs = 16;

}  // namespace stride::server
