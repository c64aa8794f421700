// Fast matmul on real weight rows of the two reference models (every
// quantized type they use) vs both scalar references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "loader/gguf_file.h"

namespace stride {
namespace {

double rel_error(const std::vector<float>& y, const std::vector<float>& ref) {
  double e = 0, r = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    e += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
    r += (double)ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}

struct ModelCase {
  const char* file;
  const char* tensor;
  DType type;
};

TEST(MatmulModels, RealRowsMatchReferences) {
  const ModelCase cases[] = {
      {"SmolLM2-135M-Instruct.Q4_1.gguf", "blk.0.ffn_gate.weight", DType::Q4_1},
      {"SmolLM2-135M-Instruct.Q4_1.gguf", "blk.0.ffn_down.weight", DType::Q4_1},
      {"SmolLM2-135M-Instruct.Q4_1.gguf", "token_embd.weight", DType::Q8_0},
      {"gemma-3-270m-q4_k_m.gguf", "blk.0.attn_q.weight", DType::Q5_0},
      {"gemma-3-270m-q4_k_m.gguf", "blk.0.attn_output.weight", DType::Q4_K},
      {"gemma-3-270m-q4_k_m.gguf", "blk.0.ffn_down.weight", DType::Q6_K},
      {"gemma-3-270m-q4_k_m.gguf", "blk.0.attn_v.weight", DType::Q8_0},
  };
  ThreadPool pool(2);
  for (const ModelCase& c : cases) {
    SCOPED_TRACE(std::string(c.file) + " " + c.tensor);
    auto file = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/models/" + c.file);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const TensorView* full = (*file)->find_tensor(c.tensor);
    ASSERT_NE(full, nullptr);
    ASSERT_EQ(full->type, c.type);
    // The first 61 rows (odd on purpose) keep the double references quick.
    TensorView w = *full;
    w.ne[1] = std::min<int64_t>(61, full->ne[1]);
    const int64_t n_in = w.ne[0], n_out = w.ne[1], n_tok = 9;
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    std::vector<float> x((size_t)(n_in * n_tok));
    for (auto& v : x) v = nd(rng);
    std::vector<float> y((size_t)(n_out * n_tok)), ref(y.size()), ref_q(y.size());
    matmul(w, x.data(), y.data(), n_tok, pool);
    matmul_ref(w, x.data(), ref.data(), n_tok);
    matmul_ref_int8_acts(w, x.data(), ref_q.data(), n_tok);
    EXPECT_LT(rel_error(y, ref_q), 1e-5);
    EXPECT_LT(rel_error(y, ref), 1e-2);
    // Decode (one token) takes the matvec tiles.
    std::vector<float> y1((size_t)n_out), r1((size_t)n_out);
    matmul(w, x.data(), y1.data(), 1, pool);
    matmul_ref_int8_acts(w, x.data(), r1.data(), 1);
    EXPECT_LT(rel_error(y1, r1), 1e-5);
  }
}

}  // namespace
}  // namespace stride
