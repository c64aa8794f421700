#pragma once
// Prompt lookup drafts (Saxena 2023; llama.cpp's lookup decoding): when the
// last n tokens of the context occurred before, the tokens that followed
// that earlier occurrence are a cheap guess of what comes next. Quotes of a
// document, code being edited and repeated names hit often.
#include <cstdint>
#include <span>
#include <vector>

namespace stride {

struct PromptLookupOptions {
  int ngram_min = 1;  // shortest suffix matched
  int ngram_max = 3;  // longest suffix matched (tried first)
  int draft_max = 8;  // tokens drafted at most
};

// Up to draft_max tokens that followed the latest earlier occurrence of the
// context's last n tokens, for the longest n in [ngram_min, ngram_max] that
// has one; empty when none does.
std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> context, const PromptLookupOptions& opts);

}  // namespace stride
