#pragma once
// The value rules of a generation request, one place for every front end.
// The HTTP reader checks each field's JSON type and range at once (its
// errors come field by field, in order) with these ranges and texts;
// check_generation applies them to a request built from typed fields (gRPC).
#include <cstdint>
#include <string>

#include "serving/generation_request.h"

namespace stride::serving {

// "a finite number in [0, 2]" ("(0, 1]" when lo_open): what a number field must be.
std::string number_range_text(double lo, double hi, bool lo_open);
// "in [1, 16]": what an integer field must be.
std::string int_range_text(int64_t lo, int64_t hi);

// "'key' must be WHAT", naming the field.
RequestError must_be(const std::string& key, const std::string& what);

// The least max_tokens a request may ask for: OpenAI's completions take 0
// (an empty answer), chat needs room for at least one token.
inline int64_t min_max_tokens(bool chat) { return chat ? 1 : 0; }

RequestError stop_list_error();
RequestError stop_size_error();
RequestError over_max_tokens_cap(const std::string& key, int64_t cap);
RequestError prompt_shape_error();  // neither text nor a non-empty list of token ids
RequestError token_id_error(int n_vocab);
RequestError prompt_tokens_over_context();

// A token prompt's ids and length, max_tokens, the sampling ranges, top_k,
// the stop list and top_logprobs: what a front end that reads no JSON checks
// before prepare_generation.
RequestError check_generation(const GenerationRequest& g, int64_t max_context_length, int n_vocab);

// The same but the float sampling ranges, which the HTTP reader checks on
// the JSON numbers before they are narrowed to float (0.01 as a float is
// below 0.01): what prepare_generation checks of every request, so no front
// end sends the engine a token id outside the vocabulary.
RequestError check_limits(const GenerationRequest& g, int64_t max_context_length, int n_vocab);

}  // namespace stride::serving
