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
// Integer tensors are refused, or left out with skip_integer_buffers (buffers
// no weight computation reads, such as BERT's position_ids).
Expected<std::vector<TensorView>> parse_safetensors(const MappedFile& file, bool skip_integer_buffers = false);

}  // namespace stride
