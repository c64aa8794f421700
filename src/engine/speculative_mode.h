#pragma once
// The speculative decoding modes, apart from the machinery (engine/speculative.h),
// so request structs can name one cheaply.
#include <string_view>

#include "core/status.h"

namespace stride {

enum class SpeculativeMode { Off, PromptLookup, Draft };
const char* speculative_mode_name(SpeculativeMode m);  // "off", "prompt-lookup", "draft"
Expected<SpeculativeMode> parse_speculative_mode(std::string_view text);

}  // namespace stride
