#pragma once
// Hyper-parameters of a BERT-style encoder (BertModel: post-LayerNorm, GELU,
// learned absolute positions, token types), from its config.json.
#include <nlohmann/json.hpp>

#include "core/status.h"

namespace stride {

struct BertConfig {
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_ff = 0;
  int n_positions = 0;     // max_position_embeddings: the longest input
  int n_token_types = 0;
  float norm_eps = 1e-12f;
  int head_dim() const { return n_head > 0 ? n_embd / n_head : 0; }
};

// Whether config.json describes a BERT encoder (model_type "bert" or a Bert* architecture).
bool is_bert_config(const nlohmann::json& j);
Expected<BertConfig> bert_config_from_json(const nlohmann::json& j);

}  // namespace stride
