#pragma once
// Maps the text pipeline of a Hugging Face tokenizer.json (normalizer,
// pre_tokenizer, BPE model flags) onto a PreTokenizerSpec. Split regexes are
// taken from the file as written and compiled with PCRE2 (UTF + UCP); a
// component stride does not implement is an Unsupported error that names it,
// never a silent difference.
#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tokenizer/pre_tokenizer.h"

namespace stride {

// GPT-2's split, as the ByteLevel pre-tokenizer applies it when use_regex is set.
extern const char* const kByteLevelRegex;

Expected<PreTokenizerSpec> spec_from_tokenizer_json(const nlohmann::json& root);

}  // namespace stride
