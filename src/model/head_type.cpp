#include "model/head_type.h"

#include <algorithm>
#include <string>

#include "kernels/dequantize.h"
#include "kernels/quantize_k.h"
#include "kernels/quantize_legacy.h"

namespace stride {

namespace {

DType dtype_of(HeadType t) {
  switch (t) {
    case HeadType::Q4_K: return DType::Q4_K;
    case HeadType::Q5_K: return DType::Q5_K;
    case HeadType::Q4_0: return DType::Q4_0;
    case HeadType::Q5_0: return DType::Q5_0;
    case HeadType::File: break;
  }
  return DType::Q5_K;
}


// Bits per weight of a type, scales included; 0 when unknown.
double bits_per_weight(DType t) {
  const DTypeInfo* info = dtype_info(t);
  if (!info || info->block_elems <= 0) return 0;
  return 8.0 * (double)info->block_bytes / (double)info->block_elems;
}

// Rows requantized per pool chunk: large enough that the page drops are a
// few MiB at a time.
constexpr int64_t kRowsPerChunk = 64;

}  // namespace

std::optional<HeadType> parse_head_type(std::string_view text) {
  if (text == "file") return HeadType::File;
  if (text == "q4_k") return HeadType::Q4_K;
  if (text == "q5_k") return HeadType::Q5_K;
  if (text == "q4_0") return HeadType::Q4_0;
  if (text == "q5_0") return HeadType::Q5_0;
  return std::nullopt;
}

const char* head_type_name(HeadType t) {
  switch (t) {
    case HeadType::File: return "file";
    case HeadType::Q4_K: return "q4_k";
    case HeadType::Q5_K: return "q5_k";
    case HeadType::Q4_0: return "q4_0";
    case HeadType::Q5_0: return "q5_0";
  }
  return "file";
}

Expected<DType> head_type_in_effect(DType file_type, int64_t n_cols, HeadType asked) {
  if (asked == HeadType::File) return file_type;
  const DType target = dtype_of(asked);
  const int64_t block = dtype_info(target)->block_elems;
  if (n_cols % block != 0) {
    return InvalidArgument(std::string("--head-type ") + head_type_name(asked) + " needs head rows of a multiple of " +
                           std::to_string(block) + " elements; this model's have " + std::to_string(n_cols) +
                           " (use --head-type file)");
  }
  const double have = bits_per_weight(file_type);
  if (have > 0 && have <= bits_per_weight(target)) return file_type;
  return target;
}

void quantize_head_row(DType type, const float* x, void* dst, int64_t n) {
  if (quantizable_k(type)) quantize_row_k(type, x, dst, n);
  else quantize_row_legacy(type, x, dst, n);
}

Expected<std::vector<uint8_t>> requantize_rows(const TensorView& head, DType type, const ModelSource* src,
                                               ThreadPool* pool) {
  if (!quantizable_k(type) && !quantizable_legacy(type)) return Unsupported(std::string("cannot quantize the head to ") + dtype_name(type));
  const int64_t rows = head.rows(), cols = head.cols();
  const int64_t out_row = dtype_row_bytes(type, cols);
  if (out_row <= 0 || head.row_bytes() <= 0) return InvalidArgument("the head's rows are not whole blocks");
  std::vector<uint8_t> out((size_t)(rows * out_row));
  const int64_t n_chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  const auto run_chunk = [&](int chunk, int) {
    std::vector<float> row((size_t)cols);  // [cols] one source row in f32
    const int64_t r0 = chunk * kRowsPerChunk, r1 = std::min(rows, r0 + kRowsPerChunk);
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_tensor_row(head, r, row.data());
      quantize_head_row(type, row.data(), out.data() + r * out_row, cols);
    }
    if (src) src->drop_resident(head.row(r0), (uint64_t)((r1 - r0) * head.row_bytes()));
  };
  if (pool && pool->size() > 1) {
    pool->run_chunks((int)n_chunks, run_chunk);
  } else {
    for (int64_t c = 0; c < n_chunks; ++c) run_chunk((int)c, (int)n_chunks);
  }
  return out;
}

}  // namespace stride
