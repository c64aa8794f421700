#pragma once
// Fill-in-the-middle prompts (completions `suffix`, llama-server's /infill):
// the code before the cursor, the code after it, and the model writes what
// goes between. The layout is prefix-suffix-middle, as Qwen2.5-Coder,
// StarCoder and CodeLlama were trained on and llama.cpp's server builds it:
//   [BOS] <PRE> prefix <SUF> suffix <MID> middle
// where `middle` (often empty) is text the middle is to start with. The
// texts are plain text: marker spellings in them stay text.
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace stride::serving {

// Unsupported when the vocabulary has no FIM markers (Tokenizer::fim_tokens).
Expected<std::vector<int32_t>> fim_prompt(const Tokenizer& tok, std::string_view prefix, std::string_view suffix,
                                          std::string_view middle = {});

}  // namespace stride::serving
