#pragma once
// Int8 quantization of f32 activation rows (Q8_0-style, one scale per 32
// elements) for the integer dot products of quantized-weight matmuls.
#include <cstdint>
#include <vector>

namespace stride {

// Activations of n_tok rows quantized in blocks of 32. Each row is padded with
// zero blocks up to a multiple of kActChunkBlocks, so kernels may always read
// whole chunks of 8 blocks (one K-quant super-block).
constexpr int64_t kActBlock = 32;
constexpr int64_t kActChunkBlocks = 8;

struct QuantizedActs {
  int64_t n_tok = 0;
  int64_t n_blocks = 0;      // real blocks per row (n_in / 32)
  int64_t row_blocks = 0;    // padded blocks per row (multiple of 8)
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
// Scale d = max|x| / 127, q = round-half-even(x * 127 / max|x|); a block with
// max|x| < 1e-30 gets d = 0 and q = 0. Identical bytes in every version.
void quantize_acts(const float* x, int64_t n_tok, int64_t n_in, QuantizedActs& out);
void quantize_acts_ref(const float* x, int64_t n_tok, int64_t n_in, QuantizedActs& out);

// The two halves of quantize_acts, so that rows can be quantized in parallel:
// size `out` once, then quantize rows [t_begin, t_end) of x from any thread.
void quantize_acts_prepare(int64_t n_tok, int64_t n_in, QuantizedActs& out);
void quantize_acts_rows(const float* x, int64_t t_begin, int64_t t_end, QuantizedActs& out);

}  // namespace stride
