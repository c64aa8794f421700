#pragma once
// Int8 quantization of f32 activation rows for the integer dot products of
// quantized-weight matmuls: one scale per 32 elements (Q8_0-style), or for
// K-quant weights one per 256-element super-block (Q8_K-style), so that the
// tiles can sum a super-block's 8 sub-blocks in integers.
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace stride {

// Activations of n_tok rows quantized in blocks of 32. Each row is padded with
// zero blocks up to a multiple of kActChunkBlocks, so kernels may always read
// whole chunks of 8 blocks (one K-quant super-block).
constexpr int64_t kActBlock = 32;
constexpr int64_t kActChunkBlocks = 8;

// Blocks of 32 that share one activation scale for weights of type t: 8 (a
// super-block) for the K-quants, whose tiles then scale each sub-block's dot
// by its integer weight scale and convert to float once per super-block.
constexpr int64_t act_scale_blocks(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K
             ? kActChunkBlocks
             : 1;
}

// Bytes between two rows of int8 activations of `bytes` each: 256 more where
// rows would be a multiple of 1 KiB apart. A tile reads 8 rows at once, and
// rows 2^k bytes apart fall into the same few L1 sets.
constexpr int64_t act_row_stride(int64_t bytes) { return bytes % 1024 == 0 ? bytes + 256 : bytes; }

struct QuantizedActs {
  int64_t n_tok = 0;
  int64_t scale_blocks = 1;  // blocks sharing one scale (act_scale_blocks); d repeats across them
  int64_t n_blocks = 0;      // real blocks per row (n_in / 32)
  int64_t row_blocks = 0;    // the row stride in blocks: n_blocks padded (multiple of 8, act_row_stride)
  std::vector<int8_t> q;     // [n_tok, row_blocks, 32]
  std::vector<float> d;      // [n_tok, row_blocks]  scale: x ≈ d * q
  std::vector<float> s;      // [n_tok, row_blocks]  d * sum(q): for weight offsets (mins)
  std::vector<int32_t> hs;   // [n_tok, row_blocks]  int16 pair (Σq[0..15], Σq[16..31]): Q6_K's -32
  std::vector<int32_t> qs;   // [n_tok, row_blocks]  Σq: constant weight offsets (-8, -16) in integers

  const int8_t* q_row(int64_t t) const { return q.data() + t * row_blocks * kActBlock; }
  const float* d_row(int64_t t) const { return d.data() + t * row_blocks; }
  const float* s_row(int64_t t) const { return s.data() + t * row_blocks; }
  const int32_t* hs_row(int64_t t) const { return hs.data() + t * row_blocks; }
  const int32_t* qs_row(int64_t t) const { return qs.data() + t * row_blocks; }
};

// Resizes `out` (reusing its capacity) and quantizes x: [n_tok, n_in], n_in % 32 == 0.
// Scale d = max|x| / 127 over the scale_blocks blocks (1 or 8) that share it,
// q = round-half-even(x * 127 / max|x|); where max|x| < 1e-30, d = 0 and q = 0.
// Identical bytes in every version.
void quantize_acts(const float* x, int64_t n_tok, int64_t n_in, QuantizedActs& out, int64_t scale_blocks = 1);
void quantize_acts_ref(const float* x, int64_t n_tok, int64_t n_in, QuantizedActs& out, int64_t scale_blocks = 1);

// The two halves of quantize_acts, so that rows can be quantized in parallel:
// size `out` once, then quantize rows [t_begin, t_end) of x from any thread.
void quantize_acts_prepare(int64_t n_tok, int64_t n_in, QuantizedActs& out, int64_t scale_blocks = 1);
void quantize_acts_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out);

}  // namespace stride
