#include "core/dtype.h"

namespace stride {

const DTypeInfo* dtype_info(uint32_t raw) {
  static const DTypeInfo kF32{"F32", 1, 4, true};
  static const DTypeInfo kF16{"F16", 1, 2, true};
  static const DTypeInfo kQ4_0{"Q4_0", 32, 18, true};
  static const DTypeInfo kQ4_1{"Q4_1", 32, 20, true};
  static const DTypeInfo kQ5_0{"Q5_0", 32, 22, true};
  static const DTypeInfo kQ5_1{"Q5_1", 32, 24, true};
  static const DTypeInfo kQ8_0{"Q8_0", 32, 34, true};
  static const DTypeInfo kQ8_1{"Q8_1", 32, 36, false};
  static const DTypeInfo kQ2_K{"Q2_K", 256, 84, true};
  static const DTypeInfo kQ3_K{"Q3_K", 256, 110, true};
  static const DTypeInfo kQ4_K{"Q4_K", 256, 144, true};
  static const DTypeInfo kQ5_K{"Q5_K", 256, 176, true};
  static const DTypeInfo kQ6_K{"Q6_K", 256, 210, true};
  static const DTypeInfo kQ8_K{"Q8_K", 256, 292, false};
  static const DTypeInfo kIQ4_NL{"IQ4_NL", 32, 18, true};
  static const DTypeInfo kIQ4_XS{"IQ4_XS", 256, 136, true};
  static const DTypeInfo kBF16{"BF16", 1, 2, true};
  static const DTypeInfo kMXFP4{"MXFP4", 32, 17, true};
  switch (static_cast<DType>(raw)) {
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q8_0: return &kQ8_0;
    case DType::Q8_1: return &kQ8_1;
    case DType::Q2_K: return &kQ2_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::Q8_K: return &kQ8_K;
    case DType::IQ4_NL: return &kIQ4_NL;
    case DType::IQ4_XS: return &kIQ4_XS;
    case DType::BF16: return &kBF16;
    case DType::MXFP4: return &kMXFP4;
  }
  return nullptr;
}

const char* dtype_name(DType t) {
  const DTypeInfo* info = dtype_info(t);
  return info ? info->name : "unknown";
}

int64_t dtype_row_bytes(DType t, int64_t n) {
  const DTypeInfo* info = dtype_info(t);
  if (!info || n < 0 || n % info->block_elems != 0) return -1;
  return n / info->block_elems * info->block_bytes;
}

}  // namespace stride
