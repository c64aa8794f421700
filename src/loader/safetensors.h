#pragma once
// safetensors reader over a memory map: 8-byte LE header length, JSON header,
// raw little-endian data. Tensor data is never copied.
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"

namespace stride {

// Largest JSON header accepted (real headers are well under 10 MiB).
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

// Views keep the HF tensor names and point into `file`, which must outlive them.
// Shapes are reversed into ggml order: HF [out, in] becomes ne = {in, out}.
// Integer tensors (buffers such as BERT's position_ids) are left out.
Expected<std::vector<TensorView>> parse_safetensors(const MappedFile& file);

}  // namespace stride
