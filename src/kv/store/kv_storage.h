#pragma once
// How the paged pool stores keys and values.
//   F16:  the default; half the bytes of f32, exact enough for inference.
//   F32:  exact, for comparisons against f32 oracles.
//   Int8: symmetric per-token, per-head int8 with an f32 scale each
//         (max|x| / 127, round to nearest): about half the bytes of f16.
#include <string>
#include <string_view>

#include "core/status.h"

namespace stride {

enum class KvStorage { F16, F32, Int8 };

// "f16" | "f32" | "int8"
const char* kv_storage_name(KvStorage s);
Expected<KvStorage> parse_kv_storage(std::string_view text);

}  // namespace stride
