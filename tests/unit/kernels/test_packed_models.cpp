// Repacked matmul on real weights of the two reference models (every
// quantized type and projection they use) vs the scalar int8 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "kernels/packed_matrix.h"
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

TEST(PackedModels, RealWeightsMatchReference) {
  const char* files[] = {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"};
  const char* tensors[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
  ThreadPool pool(2);
  for (const char* f : files) {
    auto file = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/models/" + f);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    std::vector<std::string> names = {"token_embd.weight"};
    for (int layer : {0, 5})
      for (const char* t : tensors) names.push_back("blk." + std::to_string(layer) + "." + t + ".weight");
    for (const std::string& name : names) {
      SCOPED_TRACE(std::string(f) + " " + name);
      const TensorView* full = (*file)->find_tensor(name);
      ASSERT_NE(full, nullptr);
      ASSERT_TRUE(packable(full->type));
      // At most 203 rows (odd: a padded last group) keep the double reference quick.
      TensorView w = *full;
      w.ne[1] = std::min<int64_t>(203, full->ne[1]);
      auto pm = pack_matrix(w);
      ASSERT_TRUE(pm.ok()) << pm.status().message();
      const int64_t n_in = w.ne[0], n_out = w.ne[1];
      for (int64_t n_tok : {1, 6, 9}) {
        // Activations with a wide range, as Gemma-3's residual stream has.
        std::mt19937 rng((uint32_t)(n_in + n_tok));
        std::normal_distribution<float> nd;
        std::vector<float> x((size_t)(n_in * n_tok));
        for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (i % 61 == 0 ? 300.0f : 1.0f);
        std::vector<float> y((size_t)(n_out * n_tok)), ref(y.size());
        matmul_packed(pm.value(), x.data(), y.data(), n_tok, pool);
        matmul_ref_int8_acts(w, x.data(), ref.data(), n_tok);
        EXPECT_LT(rel_error(y, ref), 1e-5) << "n_tok " << n_tok;
        double scale = 0;
        for (float v : ref) scale = std::max(scale, (double)std::fabs(v));
        for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-4 * scale) << i;
      }
    }
  }
}

// Whole tensors, every layer: the packed path and the GGUF-layout integer
// path compute the same int8 products, so they agree to float rounding.
TEST(PackedModels, WholeTensorsMatchGgufPath) {
  const char* files[] = {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"};
  ThreadPool pool(2);
  for (const char* f : files) {
    auto file = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/models/" + f);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    for (const TensorView& w : (*file)->tensors()) {
      if (w.ne[1] <= 1 || !packable(w.type)) continue;
      SCOPED_TRACE(std::string(f) + " " + w.name);
      auto pm = pack_matrix(w);
      ASSERT_TRUE(pm.ok()) << pm.status().message();
      // Past one 64-token block; the big output heads get a few tokens only.
      const bool head = w.name.find("token_embd") != std::string::npos;
      const int64_t n_in = w.ne[0], n_out = w.rows(), n_tok = head ? 3 : 70;
      std::mt19937 rng((uint32_t)n_out);
      std::normal_distribution<float> nd;
      std::vector<float> x((size_t)(n_in * n_tok));
      for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (i % 61 == 0 ? 300.0f : 1.0f);
      std::vector<float> y((size_t)(n_out * n_tok)), ref(y.size());
      matmul_packed(pm.value(), x.data(), y.data(), n_tok, pool);
      matmul(w, x.data(), ref.data(), n_tok, pool);
      EXPECT_LT(rel_error(y, ref), 1e-5);
    }
  }
}

}  // namespace
}  // namespace stride
