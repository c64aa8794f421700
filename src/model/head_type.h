#pragma once
// The type the output head (output.weight, or token_embd.weight when the
// embeddings are tied) runs in: the file's, or a smaller K-quant it is
// requantized to once at load (the head is a large share of a decode
// step's weight bytes): a K-quant (rows of whole 256-element super-blocks)
// or a 32-element legacy type. The embedding lookup keeps the file's rows.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "loader/model_source.h"

namespace stride {

enum class HeadType { File, Q4_K, Q5_K, Q4_0, Q5_0 };

// "file", "q4_k", "q5_k", "q4_0" or "q5_0" (case as written); nullopt for
// anything else.
std::optional<HeadType> parse_head_type(std::string_view text);
const char* head_type_name(HeadType t);

// The type the head runs in when `asked` is requested for a head of
// `file_type` with rows of n_cols elements: the file's type for File and for
// a head already at or below the asked type's bits per weight, else the
// asked type. InvalidArgument when rows are not whole blocks of the asked
// type (256 elements for q4_k / q5_k, 32 for q4_0 / q5_0).
Expected<DType> head_type_in_effect(DType file_type, int64_t n_cols, HeadType asked);

// One row of n values of x quantized to `type` (Q4_K, Q5_K, Q4_0 or Q5_0;
// n whole blocks of it) at dst; nothing for another type.
void quantize_head_row(DType type, const float* x, void* dst, int64_t n);

// The head's rows requantized to `type` (Q4_K, Q5_K, Q4_0 or Q5_0): [rows, row_bytes of
// type]. src (may be null): the head's mapped pages are dropped as its rows
// are read; pool (may be null) shares out the rows.
Expected<std::vector<uint8_t>> requantize_rows(const TensorView& head, DType type, const ModelSource* src,
                                               ThreadPool* pool);

}  // namespace stride
