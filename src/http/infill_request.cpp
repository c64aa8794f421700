#include "http/infill_request.h"

#include <string>
#include <utility>

namespace stride::server {

namespace {

using json = nlohmann::json;

// llama-server's names for what the completions reader already checks.
constexpr std::pair<const char*, const char*> kRenamed[] = {
    {"temperature", "temperature"}, {"top_k", "top_k"},
    {"top_p", "top_p"},             {"min_p", "min_p"},
    {"seed", "seed"},               {"presence_penalty", "presence_penalty"},
    {"frequency_penalty", "frequency_penalty"}, {"repeat_penalty", "repetition_penalty"},
    {"stop", "stop"},               {"stream", "stream"},
    {"grammar", "grammar"},         {"ignore_eos", "ignore_eos"},
    {"model", "model"},             {"logit_bias", "logit_bias"},
};

ApiError opt_text(const json& b, const char* key, std::string& out) {
  const json* v = Fields(b).find(key);
  if (!v) return {};
  if (!v->is_string()) return Fields(b).type_error(key, "a string");
  out = v->get<std::string>();
  return {};
}

// llama-server also takes logit_bias as [[id, bias], ...], `false` banning the token.
ApiError logit_bias_object(const json& lb, json& out) {
  if (!lb.is_array()) {
    out = lb;
    return {};
  }
  out = json::object();
  for (const json& pair : lb) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
        !(pair[1].is_number() || pair[1] == false)) {
      return bad_field("logit_bias", "'logit_bias' entries must be [token id, number or false]");
    }
    out[std::to_string(pair[0].get<int64_t>())] = pair[1] == false ? json(-100) : pair[1];
  }
  return {};
}

// An error about a field of the translated request, under the name the client used.
ApiError named_as_sent(ApiError e) {
  if (e.param == "prompt") e.param = "input_prefix";
  if (e.param == "max_tokens") e.param = "n_predict";
  for (const auto& [from, to] : kRenamed) {
    if (e.param == to && std::string(from) != to) e.param = from;
  }
  return e;
}

}  // namespace

ApiError parse_infill(const json& b, const ParseContext& ctx, GenerationCall& out) {
  if (!b.is_object()) return bad_field("", "the request body must be a JSON object");
  serving::FillInTheMiddle fim;
  std::string prefix;
  STRIDE_API_TRY(opt_text(b, "input_prefix", prefix));
  STRIDE_API_TRY(opt_text(b, "input_suffix", fim.suffix));
  STRIDE_API_TRY(opt_text(b, "prompt", fim.middle));
  fim.param = "input_suffix";
  if (const json* extra = Fields(b).find("input_extra"); extra && !(extra->is_array() && extra->empty())) {
    return bad_field("input_extra", "'input_extra' (repository context) is not supported");
  }
  // The completions request the fields amount to; fields llama-server reads
  // and this server does not (cache_prompt, samplers, ...) are ignored, as
  // llama-server ignores what it does not know.
  json c = {{"prompt", prefix}};
  for (const auto& [from, to] : kRenamed) {
    if (const json* v = Fields(b).find(from)) c[to] = *v;
  }
  if (const json* lb = Fields(b).find("logit_bias")) STRIDE_API_TRY(logit_bias_object(*lb, c["logit_bias"]));
  int64_t n_predict = -1;
  STRIDE_API_TRY(Fields(b).opt_int("n_predict", -2, INT32_MAX, n_predict));  // -1, -2: no limit
  if (n_predict >= 0) c["max_tokens"] = n_predict;

  serving::GenerationRequest g;
  g.sampling = SamplingParams{};  // llama-server's defaults (temperature 0.8, top-k 40, ...)
  g.sampling.seed = serving::openai_sampling_defaults().seed;
  g.open_ended = true;  // no n_predict: until the end of generation or the context
  STRIDE_API_TRY(named_as_sent(read_generation(c, false, ctx, g, out)));
  g.max_tokens_param = "n_predict";
  g.fim = std::move(fim);
  return named_as_sent(prepare_call(g, ctx, out));
}

}  // namespace stride::server
