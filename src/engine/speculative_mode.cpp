#include "engine/speculative_mode.h"

#include <string>

namespace stride {

const char* speculative_mode_name(SpeculativeMode m) {
  switch (m) {
    case SpeculativeMode::Off: return "off";
    case SpeculativeMode::PromptLookup: return "prompt-lookup";
    case SpeculativeMode::Draft: return "draft";
  }
  return "off";
}

Expected<SpeculativeMode> parse_speculative_mode(std::string_view text) {
  if (text == "off" || text == "none") return SpeculativeMode::Off;
  if (text == "prompt-lookup" || text == "lookup" || text == "ngram") return SpeculativeMode::PromptLookup;
  if (text == "draft") return SpeculativeMode::Draft;
  return InvalidArgument("speculative decoding: unknown mode '" + std::string(text) +
                         "' (off, prompt-lookup or draft)");
}

}  // namespace stride
