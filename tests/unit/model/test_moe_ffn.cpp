// The grouped mixture-of-experts block against the token-by-token scalar
// reference (model/moe_reference.h), in f32 and with Q8_0 experts (repacked
// and not), for batches where some experts get no tokens; and the router's
// gate weights against their closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "model/moe_ffn.h"
#include "model/moe_reference.h"

namespace stride {
namespace {

constexpr int64_t kEmbd = 64;

// Owns the bytes of a tensor with ggml shape ne {cols, rows, n_mat}.
struct Tensor {
  std::vector<uint8_t> bytes;
  TensorView view;
};

Tensor random_tensor(DType type, int64_t cols, int64_t rows, int64_t n_mat, std::mt19937& rng, float scale) {
  Tensor t;
  const int64_t n = cols * rows * n_mat;
  std::normal_distribution<float> normal(0.f, scale);
  if (type == DType::F32) {
    t.bytes.resize((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      std::memcpy(t.bytes.data() + 4 * i, &v, 4);
    }
  } else {  // Q8_0: per 32 elements an f16 scale d and int8 q, x = d * q
    std::uniform_int_distribution<int> q(-127, 127);
    t.bytes.resize((size_t)(n / 32) * 34);
    for (int64_t b = 0; b < n / 32; ++b) {
      uint8_t* blk = t.bytes.data() + b * 34;
      const uint16_t d = fp32_to_fp16(scale / 64.f * (float)(b % 5 + 1));
      std::memcpy(blk, &d, 2);
      for (int j = 0; j < 32; ++j) blk[2 + j] = (uint8_t)(int8_t)q(rng);
    }
  }
  t.view.name = "test";
  t.view.type = type;
  t.view.n_dims = n_mat > 1 ? 3 : 2;
  t.view.ne = {cols, rows, n_mat, 1};
  t.view.data = t.bytes.data();
  t.view.nbytes = (int64_t)t.bytes.size();
  return t;
}

struct Model {
  ModelConfig config;
  std::vector<Tensor> storage;
  MoeWeights weights;
};

// Experts stacked in 3-D tensors as GGUF files hold them, then sliced.
std::unique_ptr<Model> make_model(DType type, int n_expert, int k, int ff, int ff_shared, bool norm) {
  auto m = std::make_unique<Model>();
  ModelConfig& c = m->config;
  c.n_embd = (int)kEmbd;
  c.moe.n_expert = n_expert;
  c.moe.n_expert_used = k;
  c.moe.n_ff_expert = ff;
  c.moe.n_ff_shared = ff_shared;
  c.moe.norm_topk_prob = norm;
  std::mt19937 rng(7);
  m->storage.reserve(8);
  auto add = [&](DType t, int64_t cols, int64_t rows, int64_t n_mat, float scale) -> const TensorView& {
    m->storage.push_back(random_tensor(t, cols, rows, n_mat, rng, scale));
    return m->storage.back().view;
  };
  MoeWeights& w = m->weights;
  w.router = add(DType::F32, kEmbd, n_expert, 1, 0.5f);  // routers stay f32 in GGUF files
  const TensorView gate = add(type, kEmbd, ff, n_expert, 0.2f);
  const TensorView up = add(type, kEmbd, ff, n_expert, 0.2f);
  const TensorView down = add(type, ff, kEmbd, n_expert, 0.2f);
  for (int e = 0; e < n_expert; ++e) {
    w.experts.push_back({expert_slice(gate, e), expert_slice(up, e), expert_slice(down, e)});
  }
  if (ff_shared > 0) {
    w.shared = {add(type, kEmbd, ff_shared, 1, 0.2f), add(type, kEmbd, ff_shared, 1, 0.2f),
                add(type, ff_shared, kEmbd, 1, 0.2f)};
    w.shared_gate = add(DType::F32, kEmbd, 1, 1, 0.3f);
  }
  return m;
}

std::vector<float> random_rows(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x((size_t)n * kEmbd);
  for (float& v : x) v = normal(rng);
  return x;
}

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Runs the grouped block and the reference on n tokens; returns the experts
// that got no token.
int compare(const Model& m, const PackedMoe* packed, int n, const ReferenceMatmul& ref_matmul, float rel_tol) {
  ThreadPool pool(2);
  const std::vector<float> h = random_rows(n, 100 + n);
  std::vector<float> got((size_t)n * kEmbd), want((size_t)n * kEmbd);
  MoeScratch scratch;
  moe_ffn(m.config, m.weights, packed, h.data(), got.data(), n, scratch, pool);
  moe_ffn_reference(m.config, m.weights, h.data(), want.data(), n, ref_matmul);
  const float tol = rel_tol * std::max(1.f, max_abs(want));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << "token " << i / kEmbd << " dim " << i % kEmbd;
  }
  int empty = 0;
  for (int e = 0; e < m.config.moe.n_expert; ++e) empty += scratch.offset[(size_t)e + 1] == scratch.offset[(size_t)e];
  return empty;
}

TEST(MoeFfn, F32GroupedMatchesTokenByTokenReference) {
  const auto m = make_model(DType::F32, 8, 2, 64, 0, true);
  EXPECT_EQ(compare(*m, nullptr, 1, matmul_ref, 1e-5f), 6);  // one token: six idle experts
  EXPECT_GT(compare(*m, nullptr, 2, matmul_ref, 1e-5f), 0);
  compare(*m, nullptr, 37, matmul_ref, 1e-5f);
}

TEST(MoeFfn, SharedExpertWithoutRenormalisation) {
  const auto m = make_model(DType::F32, 6, 3, 32, 96, false);  // Qwen2-MoE's form
  EXPECT_EQ(compare(*m, nullptr, 1, matmul_ref, 1e-5f), 3);
  compare(*m, nullptr, 19, matmul_ref, 1e-5f);
}

// What the fast kernels compute: int8 activations against quantized weights,
// float activations against the f32 router (as reference_forward does).
void quantized_ref(const TensorView& w, const float* x, float* y, int64_t n) {
  if (w.type == DType::F32) {
    matmul_ref(w, x, y, n);
  } else {
    matmul_ref_int8_acts(w, x, y, n);
  }
}

TEST(MoeFfn, Q8_0ExpertsPackedAndUnpacked) {
  const auto m = make_model(DType::Q8_0, 8, 2, 64, 64, true);
  PackedMoe packed;
  ASSERT_TRUE(pack_moe_weights(m->weights, nullptr, packed).ok());
  ASSERT_EQ(packed.experts.size(), 8u);
  ASSERT_TRUE(packed.experts[3].gate && packed.experts[3].down && packed.shared.up);
  for (const PackedMoe* p : {(const PackedMoe*)nullptr, (const PackedMoe*)&packed}) {
    SCOPED_TRACE(p ? "packed" : "file layout");
    EXPECT_EQ(compare(*m, p, 1, quantized_ref, 1e-4f), 6);
    EXPECT_GT(compare(*m, p, 3, quantized_ref, 1e-4f), 0);
    compare(*m, p, 29, quantized_ref, 1e-4f);
  }
}

TEST(MoeFfn, ExpertSliceViewsTheExpertsRows) {
  std::mt19937 rng(1);
  const Tensor t = random_tensor(DType::Q8_0, 64, 16, 4, rng, 1.f);
  const TensorView e2 = expert_slice(t.view, 2);
  EXPECT_EQ(e2.rows(), 16);
  EXPECT_EQ(e2.cols(), 64);
  EXPECT_EQ(e2.data, t.view.data + 2 * 16 * (64 / 32) * 34);
  EXPECT_EQ(e2.nbytes, 16 * 2 * 34);
}

MoeConfig router_config(int n_expert, int k, bool norm, MoeGating gating) {
  MoeConfig c;
  c.n_expert = n_expert;
  c.n_expert_used = k;
  c.norm_topk_prob = norm;
  c.gating = gating;
  return c;
}

TEST(MoeRouter, SoftmaxThenTopKRenormalised) {
  const float logits[5] = {1.f, 3.f, -2.f, 3.f, 2.5f};
  int32_t expert[2];
  float weight[2];
  route_one(router_config(5, 2, true, MoeGating::SoftmaxThenTopK), logits, expert, weight);
  EXPECT_EQ(expert[0], 1);  // a tie goes to the lower index
  EXPECT_EQ(expert[1], 3);
  EXPECT_FLOAT_EQ(weight[0], 0.5f);
  EXPECT_FLOAT_EQ(weight[1], 0.5f);
}

TEST(MoeRouter, SoftmaxOverAllExpertsWithoutRenormalisation) {
  const float logits[4] = {0.f, 1.f, 2.f, -1.f};
  int32_t expert[2];
  float weight[2];
  route_one(router_config(4, 2, false, MoeGating::SoftmaxThenTopK), logits, expert, weight);
  const double z = std::exp(0.0) + std::exp(1.0) + std::exp(2.0) + std::exp(-1.0);
  EXPECT_EQ(expert[0], 2);
  EXPECT_EQ(expert[1], 1);
  EXPECT_NEAR(weight[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(weight[1], std::exp(1.0) / z, 1e-6);
}

TEST(MoeRouter, TopKThenSoftmaxIgnoresTheOthers) {
  const float logits[6] = {-1.f, 4.f, 0.5f, 3.f, 2.f, 3.5f};
  int32_t expert[3];
  float weight[3];
  route_one(router_config(6, 3, false, MoeGating::TopKThenSoftmax), logits, expert, weight);
  const double z = std::exp(4.0) + std::exp(3.5) + std::exp(3.0);
  EXPECT_EQ(expert[0], 1);
  EXPECT_EQ(expert[1], 5);
  EXPECT_EQ(expert[2], 3);
  EXPECT_NEAR(weight[0], std::exp(4.0) / z, 1e-6);
  EXPECT_NEAR(weight[2], std::exp(3.0) / z, 1e-6);
}

}  // namespace
}  // namespace stride
