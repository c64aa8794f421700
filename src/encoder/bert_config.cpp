#include "encoder/bert_config.h"

#include <cmath>

namespace stride {

namespace {

using nlohmann::json;

Status read_int(const json& j, const char* key, int lo, int hi, int& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return Corrupt(std::string("config.json: integer '") + key + "' is required");
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return Corrupt(std::string("config.json: '") + key + "' = " + std::to_string(v) + " is out of range [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  out = (int)v;
  return Status::Ok();
}

std::string string_or(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

bool is_bert_config(const json& j) {
  if (!j.is_object()) return false;
  if (string_or(j, "model_type", "") == "bert") return true;
  auto a = j.find("architectures");
  return a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string() &&
         (*a)[0].get<std::string>().rfind("Bert", 0) == 0;
}

Expected<BertConfig> bert_config_from_json(const json& j) {
  if (!is_bert_config(j)) return Unsupported("config.json: not a BERT encoder");
  BertConfig c;
  STRIDE_RETURN_IF_ERROR(read_int(j, "vocab_size", 1, 1 << 22, c.n_vocab));
  STRIDE_RETURN_IF_ERROR(read_int(j, "hidden_size", 1, 1 << 16, c.n_embd));
  STRIDE_RETURN_IF_ERROR(read_int(j, "num_hidden_layers", 1, 1024, c.n_layer));
  STRIDE_RETURN_IF_ERROR(read_int(j, "num_attention_heads", 1, 1024, c.n_head));
  STRIDE_RETURN_IF_ERROR(read_int(j, "intermediate_size", 1, 1 << 18, c.n_ff));
  STRIDE_RETURN_IF_ERROR(read_int(j, "max_position_embeddings", 1, 1 << 16, c.n_positions));
  STRIDE_RETURN_IF_ERROR(read_int(j, "type_vocab_size", 1, 1 << 10, c.n_token_types));
  if (c.n_embd % c.n_head != 0) return Corrupt("config.json: hidden_size is not a multiple of num_attention_heads");
  if (auto e = j.find("layer_norm_eps"); e != j.end()) {
    if (!e->is_number() || !std::isfinite(e->get<double>()) || e->get<double>() <= 0) {
      return Corrupt("config.json: 'layer_norm_eps' must be a positive number");
    }
    c.norm_eps = e->get<float>();
  }
  const std::string act = string_or(j, "hidden_act", "gelu");
  if (act != "gelu") return Unsupported("config.json: hidden_act '" + act + "' is not supported (only 'gelu')");
  const std::string pos = string_or(j, "position_embedding_type", "absolute");
  if (pos != "absolute") {
    return Unsupported("config.json: position_embedding_type '" + pos + "' is not supported (only 'absolute')");
  }
  return c;
}

}  // namespace stride
