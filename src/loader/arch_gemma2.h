#pragma once
// Gemma-2's conventions in GGUF files (its config.json shares Gemma-3's
// reader in hf_config.cpp).
#include "core/status.h"
#include "loader/gguf_file.h"
#include "loader/model_config.h"

namespace stride {

// Fills what "gemma2" files leave implicit, after the generic keys (the
// soft-caps among them) are read: sandwich norms (their +1 is already folded
// in by the converter), GELU-tanh, embeddings scaled by sqrt(n_embd), NeoX
// RoPE, even layers windowed (4096 tokens when the file has no window), and
// llama.cpp's softmax scale, since converted files do not carry
// query_pre_attn_scalar.
Status gemma2_from_gguf(const GGUFFile& f, ModelConfig& c);

}  // namespace stride
