#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/dequantize.h"
#include "kernels/matmul_impl.h"
#include "kernels/matmul_reference.h"
#include "kernels/quant_act.h"

namespace stride {

namespace detail {

WorkRange split_work(int64_t n_out, int64_t n_tok, int64_t row_align, int ti, int nt) {
  // Rows are the natural split (each weight row is read by one thread only);
  // fall back to tokens when there are too few rows to go around.
  if (n_out >= (int64_t)nt * row_align * 4 || n_tok < nt) {
    const int64_t units = (n_out + row_align - 1) / row_align;
    const int64_t u0 = units * ti / nt, u1 = units * (ti + 1) / nt;
    return {std::min(n_out, u0 * row_align), std::min(n_out, u1 * row_align), 0, n_tok};
  }
  return {0, n_out, n_tok * ti / nt, n_tok * (ti + 1) / nt};
}

int work_chunks(int64_t n_out, int64_t n_tok, int64_t row_align, int n_threads) {
  if (n_threads <= 1) return 1;
  constexpr int64_t kPerThread = 4;
  const int64_t units = (n_out + row_align - 1) / row_align;
  // Enough rows for a row split into many chunks (see split_work)?
  int64_t chunks = std::min<int64_t>(kPerThread * n_threads, units / 4);
  if (chunks < n_threads) chunks = std::min<int64_t>(n_threads, std::max<int64_t>(n_tok, 1));
  return (int)std::max<int64_t>(1, chunks);
}

}  // namespace detail

namespace {

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

}  // namespace

void matmul(const TensorView& w, const float* x, float* y, int64_t n_tok, ThreadPool& pool) {
  const DTypeInfo* info = dtype_info(w.type);
  const int64_t n_out = w.rows();
  if (n_tok <= 0 || n_out <= 0) return;
  if (!info || !info->supported || w.ne[0] % info->block_elems != 0) {
    // Programmer error (the loader rejects such tensors); keep the output defined.
    std::fill(y, y + n_tok * n_out, 0.0f);
    return;
  }
  if (is_float_type(w.type)) {
    detail::matmul_float(w, x, y, n_tok, pool);
  } else {
    detail::matmul_quantized(w, x, y, n_tok, pool);
  }
}

void matmul_ref(const TensorView& w, const float* x, float* y, int64_t n_tok) {
  const int64_t n_in = w.ne[0], n_out = w.rows();
  std::vector<float> row((size_t)n_in);  // [n_in] one dequantized weight row
  for (int64_t r = 0; r < n_out; ++r) {
    dequantize_tensor_row(w, r, row.data());
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* xt = x + t * n_in;
      double acc = 0.0;
      for (int64_t i = 0; i < n_in; ++i) acc += (double)row[(size_t)i] * (double)xt[i];
      y[t * n_out + r] = (float)acc;
    }
  }
}

void matmul_ref_int8_acts(const TensorView& w, const float* x, float* y, int64_t n_tok) {
  const int64_t n_in = w.ne[0];
  QuantizedActs acts;
  quantize_acts_ref(x, n_tok, n_in, acts, act_scale_blocks(w.type));
  std::vector<float> xq((size_t)(n_tok * n_in));  // [n_tok, n_in] d * q
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t i = 0; i < n_in; ++i) {
      const int64_t b = i / kActBlock;
      xq[(size_t)(t * n_in + i)] = acts.d_row(t)[b] * (float)acts.q_row(t)[i];
    }
  matmul_ref(w, xq.data(), y, n_tok);
}

}  // namespace stride
