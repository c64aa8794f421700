#pragma once
// A BERT-style sentence encoder loaded from a sentence-transformers folder
// (config.json, model.safetensors, tokenizer.json; 1_Pooling/config.json and
// modules.json for pooling and normalization): weights, WordPiece tokenizer
// and how the token states become one embedding.
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"
#include "encoder/bert_config.h"
#include "kernels/pooling.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace stride {

struct BertLayerWeights {
  TensorView wq, bq, wk, bk, wv, bv;   // [n_embd, n_embd], [n_embd]
  TensorView wo, bo;                   // attention output projection
  TensorView attn_norm_w, attn_norm_b; // post-attention LayerNorm
  TensorView w_up, b_up;               // [n_ff, n_embd], [n_ff]
  TensorView w_down, b_down;           // [n_embd, n_ff], [n_embd]
  TensorView ffn_norm_w, ffn_norm_b;   // post-FFN LayerNorm
};

struct BertWeights {
  TensorView tok_embd;   // [n_vocab, n_embd]
  TensorView pos_embd;   // [n_positions, n_embd]
  TensorView type_embd;  // [n_token_types, n_embd]
  TensorView embd_norm_w, embd_norm_b;
  std::vector<BertLayerWeights> layers;
};

class EncoderModel {
 public:
  // A folder whose config.json is a BERT encoder; weights must be F32.
  static Expected<std::unique_ptr<EncoderModel>> open(const std::string& dir);
  // Whether `path` is a folder holding a BERT encoder's config.json.
  static bool is_encoder_folder(const std::string& path);

  const BertConfig& config() const { return config_; }
  const BertWeights& weights() const { return w_; }
  const WordPieceTokenizer& tokenizer() const { return *tokenizer_; }
  Pooling pooling() const { return pooling_; }
  bool normalize() const { return normalize_; }
  // The longest input, [CLS] and [SEP] included.
  int max_tokens() const { return config_.n_positions; }
  const std::string& path() const { return path_; }

 private:
  EncoderModel() = default;
  Status bind(const std::vector<TensorView>& views);

  std::string path_;
  BertConfig config_;
  BertWeights w_;
  std::unique_ptr<WordPieceTokenizer> tokenizer_;
  Pooling pooling_ = Pooling::Mean;
  bool normalize_ = false;
  MappedFile file_;  // the weights' bytes
};

}  // namespace stride
