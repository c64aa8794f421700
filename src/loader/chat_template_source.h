#pragma once
// Where a model keeps its chat template: a GGUF's tokenizer.chat_template, or
// in an HF folder chat_template.jinja (newer transformers) or
// tokenizer_config.json's "chat_template" (a string, or a list of named
// templates whose "default" entry, else the first, is used).
#include <string>

#include "core/status.h"

namespace stride {

class ModelSource;

// The template text; an empty string when the model has none. Corrupt when
// a file that should hold it is malformed.
Expected<std::string> model_chat_template(const ModelSource& src);

}  // namespace stride
