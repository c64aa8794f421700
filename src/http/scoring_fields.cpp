#include "http/scoring_fields.h"

#include <charconv>
#include <cmath>

namespace stride::server {

namespace {

using json = nlohmann::json;

constexpr double kMaxBias = 100.0;  // OpenAI's bounds

// A token id written as JSON object keys must be: decimal digits only.
bool parse_token_id(const std::string& key, int n_vocab, int32_t& id) {
  if (key.empty() || key.size() > 10) return false;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), v);
  if (ec != std::errc() || end != key.data() + key.size() || key[0] == '-' || v >= n_vocab) return false;
  id = (int32_t)v;
  return true;
}

ApiError read_suffix(const json& b, serving::GenerationRequest& g) {
  const json* s = Fields(b).find("suffix");
  if (!s) return {};
  if (!s->is_string()) return Fields(b).type_error("suffix", "a string");
  if (g.prompt != serving::GenerationRequest::Prompt::Text) {
    return bad_field("suffix", "'suffix' (fill-in-the-middle) needs a text prompt");
  }
  g.fim = serving::FillInTheMiddle{s->get<std::string>(), "", "suffix"};
  return {};
}

}  // namespace

ApiError read_logit_bias(const json& b, int n_vocab, SamplingParams& s) {
  const json* lb = Fields(b).find("logit_bias");
  if (!lb) return {};
  if (!lb->is_object()) return Fields(b).type_error("logit_bias", "an object mapping token ids to numbers");
  s.logit_bias.clear();
  s.logit_bias.reserve(lb->size());
  for (const auto& [key, value] : lb->items()) {
    LogitBias entry;
    if (!parse_token_id(key, n_vocab, entry.id)) {
      return bad_field("logit_bias", "'logit_bias' key '" + key.substr(0, 64) +
                                         "' is not a token id of this model's vocabulary (0 to " +
                                         std::to_string(n_vocab - 1) + ")");
    }
    const double v = value.is_number() ? value.get<double>() : NAN;
    if (!std::isfinite(v) || v < -kMaxBias || v > kMaxBias) {
      return bad_field("logit_bias", "'logit_bias' value for token " + key + " must be a number in [-100, 100]");
    }
    entry.bias = (float)v;
    s.logit_bias.push_back(entry);
  }
  return {};
}

ApiError read_scoring_fields(const json& b, bool chat, int n_vocab, serving::GenerationRequest& g) {
  STRIDE_API_TRY(read_logit_bias(b, n_vocab, g.sampling));
  Fields f(b);
  STRIDE_API_TRY(f.opt_bool("echo", g.echo));
  if (chat) {
    if (g.echo) return bad_field("echo", "'echo' is only accepted by /v1/completions");
    return {};
  }
  STRIDE_API_TRY(read_suffix(b, g));
  if (g.echo && g.fim) return bad_field("echo", "'echo' cannot be combined with 'suffix'");
  return {};
}

}  // namespace stride::server
