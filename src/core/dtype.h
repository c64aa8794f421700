#pragma once
// Element and block types of weights, numbered as in GGUF (ggml_type).
#include <cstddef>
#include <cstdint>

namespace stride {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
  MXFP4 = 39,
};

struct DTypeInfo {
  const char* name;
  int64_t block_elems;  // elements per block (1 for plain floats)
  int64_t block_bytes;  // bytes per block
  bool supported;       // stride can compute with it
};

// nullptr when `raw` is not a type stride knows (unknown GGUF type id).
const DTypeInfo* dtype_info(uint32_t raw);
inline const DTypeInfo* dtype_info(DType t) { return dtype_info(static_cast<uint32_t>(t)); }
const char* dtype_name(DType t);

// Bytes of a row of n elements; -1 when n is not a multiple of the block size.
int64_t dtype_row_bytes(DType t, int64_t n);

}  // namespace stride
