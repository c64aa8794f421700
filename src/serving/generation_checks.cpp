#include "serving/generation_checks.h"

#include <cmath>
#include <cstdio>

namespace stride::serving {

std::string number_range_text(double lo, double hi, bool lo_open) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "a finite number in %c%g, %g]", lo_open ? '(' : '[', lo, hi);
  return buf;
}

std::string int_range_text(int64_t lo, int64_t hi) {
  return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

RequestError must_be(const std::string& key, const std::string& what) {
  return invalid_field(key, "'" + key + "' must be " + what);
}

RequestError stop_list_error() {
  return invalid_field("stop", "'stop' must be a string or a list of at most " + std::to_string(kMaxStopStrings) +
                                   " strings");
}

RequestError stop_size_error() {
  return invalid_field("stop", "each stop string must be at most " + std::to_string(kMaxStopBytes) + " bytes");
}

RequestError over_max_tokens_cap(const std::string& key, int64_t cap) {
  return invalid_field(key, "'" + key + "' exceeds the server cap of " + std::to_string(cap));
}

RequestError prompt_shape_error() {
  return invalid_field("prompt", "'prompt' must be a string, a list of token ids, or a list of one of those");
}

RequestError token_id_error(int n_vocab) {
  return invalid_field("prompt", "token ids must be integers in [0, " + std::to_string(n_vocab) + ")");
}

RequestError prompt_tokens_over_context() {
  return {RequestError::Kind::TooLong, "the prompt has more tokens than the context length", "prompt",
          "prompt_too_long"};
}

namespace {

RequestError check_int(const char* key, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return {};
  return must_be(key, int_range_text(lo, hi));
}

RequestError check_float_ranges(const SamplingParams& s) {
  for (const SamplingRange& r : kSamplingRanges) {
    const double x = s.*r.target;
    const bool below = r.lo_open ? !(x > r.lo) : !(x >= r.lo);
    if (!std::isfinite(x) || below || x > r.hi) return must_be(r.key, number_range_text(r.lo, r.hi, r.lo_open));
  }
  return {};
}

RequestError check_stop(const std::vector<std::string>& stop) {
  if (stop.size() > kMaxStopStrings) return stop_list_error();
  for (const std::string& s : stop) {
    if (s.size() > kMaxStopBytes) return stop_size_error();
  }
  return {};
}

RequestError check_tokens(const std::vector<int32_t>& tokens, int64_t max_context_length, int n_vocab) {
  if (tokens.empty()) return prompt_shape_error();
  if ((int64_t)tokens.size() > max_context_length) return prompt_tokens_over_context();
  for (int32_t id : tokens) {
    if (id < 0 || id >= n_vocab) return token_id_error(n_vocab);
  }
  return {};
}

RequestError check(const GenerationRequest& g, int64_t max_context_length, int n_vocab, bool float_ranges) {
  if (g.prompt == GenerationRequest::Prompt::Tokens) {
    if (RequestError e = check_tokens(g.tokens, max_context_length, n_vocab); !e.ok()) return e;
  }
  if (g.max_tokens) {
    if (RequestError e = check_int(g.max_tokens_param.c_str(), *g.max_tokens, g.chat() ? 1 : 0, INT32_MAX); !e.ok())
      return e;
  }
  if (float_ranges) {
    if (RequestError e = check_float_ranges(g.sampling); !e.ok()) return e;
  }
  if (RequestError e = check_int("top_k", g.sampling.top_k, -1, kMaxTopK); !e.ok()) return e;
  if (RequestError e = check_stop(g.stop); !e.ok()) return e;
  if (g.top_logprobs >= 0) return check_int("top_logprobs", g.top_logprobs, 0, kMaxTopLogprobs);
  return {};
}

}  // namespace

RequestError check_generation(const GenerationRequest& g, int64_t max_context_length, int n_vocab) {
  return check(g, max_context_length, n_vocab, true);
}

RequestError check_limits(const GenerationRequest& g, int64_t max_context_length, int n_vocab) {
  return check(g, max_context_length, n_vocab, false);
}

}  // namespace stride::serving
