#include "http/embeddings_request.h"
#include "http/openai_fields.h"
#include "http/openai_request.h"

#include <openssl/evp.h>

#include <bit>
#include <cstring>

namespace stride::server {

namespace {

using json = nlohmann::json;

ApiError read_ids(const json& arr, const EmbeddingsContext& ctx, std::vector<int32_t>& out) {
  if (arr.empty()) return bad_field("input", "a token list in 'input' is empty");
  if ((int64_t)arr.size() > ctx.max_input_tokens) {
    return bad_field("input", "an input has " + std::to_string(arr.size()) + " tokens; this model reads at most " +
                                  std::to_string(ctx.max_input_tokens), "input_too_long");
  }
  out.reserve(arr.size());
  for (const json& t : arr) {
    if (!is_json_integer(t)) return bad_field("input", "token lists in 'input' must hold integers only");
    const std::optional<int64_t> id = json_int64(t);
    if (!id || *id < 0 || *id >= ctx.n_vocab) {
      return bad_field("input", "token ids must be integers in [0, " + std::to_string(ctx.n_vocab) + ")");
    }
    out.push_back((int32_t)*id);
  }
  return {};
}

ApiError read_text(const json& s, const EmbeddingsContext& ctx, EmbeddingsCall& out) {
  const std::string& text = s.get_ref<const std::string&>();
  if (text.empty()) return bad_field("input", "'input' strings must not be empty");
  std::vector<int32_t> ids = ctx.encode(text);
  if (ids.empty()) return bad_field("input", "an 'input' string has no tokens");
  if ((int64_t)ids.size() > ctx.max_input_tokens) {
    return bad_field("input", "an input has " + std::to_string(ids.size()) + " tokens; this model reads at most " +
                                  std::to_string(ctx.max_input_tokens), "input_too_long");
  }
  if (!out.prompt_text.empty()) out.prompt_text += '\n';
  out.prompt_text += text;
  out.inputs.push_back(std::move(ids));
  return {};
}

ApiError read_inputs(const json& in, const EmbeddingsContext& ctx, EmbeddingsCall& out) {
  const char* shape = "'input' must be a string, a list of strings, a list of token ids or a list of token-id lists";
  if (in.is_string()) return read_text(in, ctx, out);
  if (!in.is_array() || in.empty()) return bad_field("input", shape);
  if (is_json_integer(in[0])) {  // one input of token ids
    std::vector<int32_t> ids;
    STRIDE_API_TRY(read_ids(in, ctx, ids));
    out.inputs.push_back(std::move(ids));
    return {};
  }
  if ((int64_t)in.size() > ctx.max_inputs) {
    return bad_field("input", "at most " + std::to_string(ctx.max_inputs) + " inputs are accepted in one request",
                     "too_many_inputs");
  }
  const bool strings = in[0].is_string();
  for (const json& item : in) {
    if (strings && item.is_string()) {
      STRIDE_API_TRY(read_text(item, ctx, out));
    } else if (!strings && item.is_array()) {
      std::vector<int32_t> ids;
      STRIDE_API_TRY(read_ids(item, ctx, ids));
      out.inputs.push_back(std::move(ids));
    } else {
      return bad_field("input", std::string(shape) + " (one kind per request)");
    }
  }
  return {};
}

}  // namespace

ApiError parse_embeddings(const json& b, const EmbeddingsContext& ctx, EmbeddingsCall& out) {
  if (!b.is_object()) return bad_field("", "the request body must be a JSON object");
  Fields f(b);
  STRIDE_API_TRY(check_unknown_fields(b, Endpoint::Embeddings, ctx.strict_requests));
  STRIDE_API_TRY(check_model_and_nulls(b, Endpoint::Embeddings, ctx.strict_requests));
  STRIDE_API_TRY(check_ignored_fields(b, Endpoint::Embeddings));
  std::string model, format = "float";
  STRIDE_API_TRY(f.opt_string("model", 1024, model));
  STRIDE_API_TRY(check_model_name(model, ctx.model_names));
  STRIDE_API_TRY(f.opt_string("encoding_format", 16, format));
  if (format != "float" && format != "base64") return bad_field("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
  out.base64 = format == "base64";
  int64_t dims = ctx.n_embd;
  STRIDE_API_TRY(f.opt_int("dimensions", 1, 1 << 20, dims));
  if (dims != ctx.n_embd) {
    return bad_field("dimensions", "this model's embeddings have " + std::to_string(ctx.n_embd) +
                                       " dimensions and cannot be shortened; 'dimensions' may only be " +
                                       std::to_string(ctx.n_embd));
  }
  const json* in = f.find("input");
  if (!in) return bad_field("input", "'input' is required");
  STRIDE_API_TRY(read_inputs(*in, ctx, out));
  int64_t total = 0;
  for (const auto& ids : out.inputs) total += (int64_t)ids.size();
  if (total > ctx.max_total_tokens) {
    return bad_field("input", "the inputs hold " + std::to_string(total) + " tokens; at most " +
                                  std::to_string(ctx.max_total_tokens) + " are accepted in one request",
                     "too_many_tokens");
  }
  return {};
}

std::string base64_floats(const std::vector<float>& v) {
  static_assert(std::endian::native == std::endian::little, "floats are sent as little-endian bytes");
  const size_t n = v.size() * sizeof(float);
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(v.data()), (int)n);
  out.resize(len < 0 ? 0 : (size_t)len);
  return out;
}

json embeddings_json(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                     int prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json e = {{"object", "embedding"}, {"index", i}};
    e["embedding"] = base64 ? json(base64_floats(vectors[i])) : json(vectors[i]);
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace stride::server
