#pragma once
// Reading RopeScaling from the two file formats.
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "loader/gguf_file.h"
#include "loader/rope_scaling.h"

namespace stride {

// A config.json rope_scaling / rope_parameters object (transformers' keys:
// rope_type or type, factor, original_max_position_embeddings, attention_factor,
// mscale, mscale_all_dim, beta_fast, beta_slow, truncate, low_freq_factor,
// high_freq_factor, short_factor, long_factor). `top` is the config itself:
// its original_max_position_embeddings wins (as in transformers) and its
// max_position_embeddings is the default original context and the base of a
// missing yarn/longrope factor. `where` names the object in messages.
Status read_rope_scaling_json(const nlohmann::json& r, const nlohmann::json& top, const std::string& where,
                              RopeScaling& out);

// GGUF: "<arch>.rope.scaling.{type,factor,original_context_length,attn_factor,
// yarn_attn_factor,yarn_beta_fast,yarn_beta_slow,yarn_log_multiplier}", the
// legacy "<arch>.rope.scale_linear", and the tensors llama.cpp's converters
// write: rope_freqs (llama3 frequency divisors), rope_factors_long/short
// (LongRoPE). n_ctx_train: the file's context_length.
Status read_rope_scaling_gguf(const GGUFFile& f, const std::string& arch, int64_t n_ctx_train,
                              RopeScaling& out);

}  // namespace stride
