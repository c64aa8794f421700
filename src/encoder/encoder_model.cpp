#include "encoder/encoder_model.h"

#include <filesystem>
#include <map>

#include "loader/json_file.h"
#include "loader/safetensors.h"

namespace stride {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Expected<json> read_json(const fs::path& p) { return read_json_file(p.string()); }

// sentence-transformers' pooling (1_Pooling/config.json; mean when absent) and
// whether a Normalize module follows it (modules.json).
Status read_sentence_transformers(const fs::path& dir, Pooling& pooling, bool& normalize) {
  std::error_code ec;
  if (fs::exists(dir / "1_Pooling" / "config.json", ec)) {
    STRIDE_ASSIGN_OR_RETURN(json p, read_json(dir / "1_Pooling" / "config.json"));
    auto on = [&](const char* key) { return p.is_object() && p.value(key, false) == true; };
    if (on("pooling_mode_max_tokens") || on("pooling_mode_mean_sqrt_len_tokens") ||
        on("pooling_mode_weightedmean_tokens")) {
      return Unsupported("1_Pooling/config.json: only mean, CLS and last-token pooling are supported");
    }
    pooling = on("pooling_mode_cls_token") ? Pooling::Cls : on("pooling_mode_lasttoken") ? Pooling::Last : Pooling::Mean;
  }
  if (fs::exists(dir / "modules.json", ec)) {
    STRIDE_ASSIGN_OR_RETURN(json m, read_json(dir / "modules.json"));
    if (m.is_array()) {
      for (const json& mod : m) {
        if (mod.is_object() && mod.value("type", "") == "sentence_transformers.models.Normalize") normalize = true;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

bool EncoderModel::is_encoder_folder(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || !fs::exists(fs::path(path) / "config.json", ec)) return false;
  auto j = read_json(fs::path(path) / "config.json");
  return j.ok() && is_bert_config(*j);
}

Expected<std::unique_ptr<EncoderModel>> EncoderModel::open(const std::string& dir) {
  std::unique_ptr<EncoderModel> m(new EncoderModel());
  m->path_ = dir;
  const fs::path root(dir);
  auto fail = [&](const Status& st) { return Status(st.code(), st.message() + " [" + dir + "]"); };
  auto cfg_json = read_json(root / "config.json");
  if (!cfg_json.ok()) return fail(cfg_json.status());
  auto cfg = bert_config_from_json(*cfg_json);
  if (!cfg.ok()) return fail(cfg.status());
  m->config_ = *cfg;
  auto file = MappedFile::open((root / "model.safetensors").string());
  if (!file.ok()) return fail(file.status());
  m->file_ = std::move(*file);
  auto views = parse_safetensors(m->file_, /*skip_integer_buffers=*/true);  // position_ids
  if (!views.ok()) return fail(views.status());
  if (Status st = m->bind(*views); !st.ok()) return fail(st);
  auto tok = WordPieceTokenizer::from_json_file((root / "tokenizer.json").string());
  if (!tok.ok()) return tok.status();
  m->tokenizer_ = std::move(*tok);
  if (m->tokenizer_->n_vocab() > m->config_.n_vocab) {
    return fail(Corrupt("tokenizer.json has more tokens than the embedding table"));
  }
  if (Status st = read_sentence_transformers(root, m->pooling_, m->normalize_); !st.ok()) return fail(st);
  return m;
}

Status EncoderModel::bind(const std::vector<TensorView>& views) {
  std::map<std::string, const TensorView*> by_name;
  for (const TensorView& v : views) {
    // BertForMaskedLM and friends prefix the encoder's tensors with "bert.".
    by_name[v.name.rfind("bert.", 0) == 0 ? v.name.substr(5) : v.name] = &v;
  }
  const BertConfig& c = config_;
  // Shapes in ggml order: {columns, rows}.
  auto get = [&](const std::string& name, int64_t cols, int64_t rows, TensorView& out) -> Status {
    auto it = by_name.find(name);
    if (it == by_name.end()) return NotFound("model.safetensors: tensor '" + name + "' is missing");
    const TensorView& t = *it->second;
    if (t.type != DType::F32) return Unsupported("model.safetensors: '" + name + "' is not F32 (only F32 encoders are supported)");
    if (t.ne[0] != cols || t.rows() != rows) {
      return Corrupt("model.safetensors: '" + name + "' has shape [" + std::to_string(t.rows()) + ", " +
                     std::to_string(t.ne[0]) + "], expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    }
    out = t;
    return Status::Ok();
  };
  const int64_t E = c.n_embd, F = c.n_ff;
  STRIDE_RETURN_IF_ERROR(get("embeddings.word_embeddings.weight", E, c.n_vocab, w_.tok_embd));
  STRIDE_RETURN_IF_ERROR(get("embeddings.position_embeddings.weight", E, c.n_positions, w_.pos_embd));
  STRIDE_RETURN_IF_ERROR(get("embeddings.token_type_embeddings.weight", E, c.n_token_types, w_.type_embd));
  STRIDE_RETURN_IF_ERROR(get("embeddings.LayerNorm.weight", E, 1, w_.embd_norm_w));
  STRIDE_RETURN_IF_ERROR(get("embeddings.LayerNorm.bias", E, 1, w_.embd_norm_b));
  w_.layers.resize((size_t)c.n_layer);
  for (int il = 0; il < c.n_layer; ++il) {
    BertLayerWeights& L = w_.layers[(size_t)il];
    const std::string p = "encoder.layer." + std::to_string(il) + ".";
    STRIDE_RETURN_IF_ERROR(get(p + "attention.self.query.weight", E, E, L.wq));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.self.query.bias", E, 1, L.bq));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.self.key.weight", E, E, L.wk));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.self.key.bias", E, 1, L.bk));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.self.value.weight", E, E, L.wv));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.self.value.bias", E, 1, L.bv));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.output.dense.weight", E, E, L.wo));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.output.dense.bias", E, 1, L.bo));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.output.LayerNorm.weight", E, 1, L.attn_norm_w));
    STRIDE_RETURN_IF_ERROR(get(p + "attention.output.LayerNorm.bias", E, 1, L.attn_norm_b));
    STRIDE_RETURN_IF_ERROR(get(p + "intermediate.dense.weight", E, F, L.w_up));
    STRIDE_RETURN_IF_ERROR(get(p + "intermediate.dense.bias", F, 1, L.b_up));
    STRIDE_RETURN_IF_ERROR(get(p + "output.dense.weight", F, E, L.w_down));
    STRIDE_RETURN_IF_ERROR(get(p + "output.dense.bias", E, 1, L.b_down));
    STRIDE_RETURN_IF_ERROR(get(p + "output.LayerNorm.weight", E, 1, L.ffn_norm_w));
    STRIDE_RETURN_IF_ERROR(get(p + "output.LayerNorm.bias", E, 1, L.ffn_norm_b));
  }
  return Status::Ok();
}

}  // namespace stride
