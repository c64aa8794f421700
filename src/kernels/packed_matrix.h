#pragma once
// Quantized weights repacked once at load into a row-interleaved layout:
// groups of 8 rows, each 32-element block of the 8 rows stored together so
// that one ymm holds 4 consecutive elements of all 8 rows (one row per int32
// lane). One broadcast activation word then feeds 8 rows, the integer dot
// products of 8 rows end in one vector, and the block scale is applied to 8
// rows with one FMA - no horizontal sums and no per-row decode buffer.
// Bits per weight are unchanged (nibbles stay packed) except where a scale or
// min is widened to a byte (Q2_K +19%, Q3_K +4%, Q4_K +2.8%, Q5_K +2.3%,
// IQ4_XS +1.5%); see packed_format.h.
// Float weights (F32, F16, BF16) keep their values bit for bit, as
// [n_groups, n_in / 8, 8 rows, 8 elements]: the float matmul's tiles then
// read 8 rows as one sequential stream (kernels/packed_float.cpp).
#include <cstdint>
#include <functional>
#include <vector>

#include "core/huge_page_allocator.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace stride {

struct PackedMatrix {
  DType type = DType::F32;   // the GGUF type the weights came from
  int64_t n_in = 0;          // row length (elements)
  int64_t n_out = 0;         // rows
  int64_t n_groups = 0;      // ceil(n_out / 8); padding rows are all zero
  int64_t group_bytes = 0;   // bytes of one 8-row group (all its blocks)
  // [n_groups, group_bytes]; on huge pages, and left uninitialised on resize
  // so that pages become resident only as pack_matrix writes them (it fills
  // one group at a time while the loader drops the source pages it has read).
  std::vector<uint8_t, HugePageAllocator<uint8_t>> data;
};

constexpr int64_t kPackRows = 8;
constexpr int64_t kPackFloatElems = 8;  // a float row's elements per group step

// Whether pack_matrix supports this weight type (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4; F32, F16, BF16).
bool packable(DType t);
// Whether pack_matrix repacks this tensor: a packable type, and for float
// types rows of a multiple of kPackFloatElems (others stay row-major).
bool packable(const TensorView& w);
bool is_packable_float(DType t);

// Repacks a 2-D weight [n_out, n_in]. InvalidArgument for a tensor without
// data or a row length that is not a whole number of blocks; Unsupported for
// a tensor packable() rejects.
// rows_read, when set, is called as the source rows are consumed (every few
// MiB, in order), with the bytes read since the last call: the loader drops
// their mapped pages, so a large matrix is never resident twice.
using RowsRead = std::function<void(const uint8_t* begin, int64_t bytes)>;
Expected<PackedMatrix> pack_matrix(const TensorView& w, const RowsRead& rows_read = {});

// Y = X · Wᵀ as matmul() (kernels/matmul.h), with int8-quantized activations:
//   x: [n_tok, n_in] f32, y: [n_tok, n_out] f32 (overwritten).
// Matches matmul_ref_int8_acts to float rounding. Float weights run the
// float matmul of the active path, equal to matmul() bit for bit.
void matmul_packed(const PackedMatrix& w, const float* x, float* y, int64_t n_tok,
                   ThreadPool& pool);

// Several matrices with the same row length applied to the same x, e.g. the
// Q, K and V projections: the activations are quantized once and all
// matrices' rows are shared out in one pool dispatch (ys[i]: [n_tok, n_out_i]).
void matmul_packed_multi(const PackedMatrix* const* ws, float* const* ys, int n_mats,
                         const float* x, int64_t n_tok, ThreadPool& pool);

}  // namespace stride
