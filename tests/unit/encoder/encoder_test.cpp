// The BERT encoder's fast path against its scalar reference, on the real
// all-MiniLM-L6-v2 (scripts/fetch_models) and on random data for each op.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "encoder/encoder_forward.h"
#include "encoder/encoder_ops.h"
#include "kernels/pooling.h"

namespace stride {
namespace {

const std::string kMiniLM = std::string(STRIDE_SOURCE_DIR) + "/models/all-MiniLM-L6-v2";

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0.f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += (double)a[i] * b[i];
    aa += (double)a[i] * a[i];
    bb += (double)b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(EncoderOps, LayerNormMatchesReference) {
  ThreadPool pool(2);
  const int64_t rows = 37, n = 384;
  auto x = random_vector(rows * n, 1, 3.f);
  for (int64_t r = 0; r < rows; ++r) x[r * n] += 50.f;  // a large mean
  const auto w = random_vector(n, 2), b = random_vector(n, 3);
  std::vector<float> fast(x.size()), ref(x.size());
  layernorm(x.data(), w.data(), b.data(), fast.data(), rows, n, 1e-12f, pool);
  layernorm_ref(x.data(), w.data(), b.data(), ref.data(), rows, n, 1e-12f);
  EXPECT_LT(max_abs_diff(fast.data(), ref.data(), x.size()), 2e-5f);
}

TEST(EncoderOps, GeluMatchesReference) {
  ThreadPool pool(2);
  auto x = random_vector(10000, 4, 4.f);
  auto ref = x;
  gelu_erf(x.data(), (int64_t)x.size(), pool);
  gelu_erf_ref(ref.data(), (int64_t)ref.size());
  EXPECT_LT(max_abs_diff(x.data(), ref.data(), x.size()), 1e-5f);
  float y[3] = {0.f, 1.f, -1.f};
  gelu_erf_ref(y, 3);
  EXPECT_FLOAT_EQ(y[0], 0.f);
  EXPECT_NEAR(y[1], 0.8413447f, 1e-6);  // x * Φ(x)
  EXPECT_NEAR(y[2], -0.1586553f, 1e-6);
}

TEST(EncoderOps, AttentionMatchesReferenceAndSeesEveryKey) {
  ThreadPool pool(2);
  const int n = 45, heads = 3, hd = 16;
  const int64_t stride = heads * hd + 5;  // padded rows
  const auto q = random_vector(n * stride, 5), k = random_vector(n * stride, 6), v = random_vector(n * stride, 7);
  std::vector<float> fast(n * stride, 0.f), ref(n * stride, 0.f);
  bidirectional_attention(q.data(), k.data(), v.data(), fast.data(), n, heads, hd, stride, 0.25f, pool);
  bidirectional_attention_ref(q.data(), k.data(), v.data(), ref.data(), n, heads, hd, stride, 0.25f);
  EXPECT_LT(max_abs_diff(fast.data(), ref.data(), fast.size()), 1e-5f);
  // Bidirectional: the first query's output depends on the last key's value.
  auto v2 = v;
  v2[(n - 1) * stride] += 100.f;
  std::vector<float> moved(n * stride, 0.f);
  bidirectional_attention(q.data(), k.data(), v2.data(), moved.data(), n, heads, hd, stride, 0.25f, pool);
  EXPECT_NE(moved[0], fast[0]);
}

TEST(Pooling, ChunkedRowsPoolAsOne) {
  const int64_t n = 10, dim = 7;
  const auto rows = random_vector(n * dim, 8);
  for (Pooling p : {Pooling::Mean, Pooling::Last, Pooling::Cls}) {
    PooledRows whole(p, dim), chunked(p, dim);
    whole.add(rows.data(), n);
    chunked.add(rows.data(), 3);
    chunked.add(rows.data() + 3 * dim, 6);
    chunked.add(rows.data() + 9 * dim, 1);
    EXPECT_EQ(whole.result(true), chunked.result(true)) << pooling_name(p);
  }
  PooledRows mean(Pooling::Mean, dim);
  mean.add(rows.data(), n);
  const auto m = mean.result(false);
  double s = 0;
  for (int64_t r = 0; r < n; ++r) s += rows[r * dim + 2];
  EXPECT_NEAR(m[2], s / n, 1e-6);
  const auto unit = mean.result(true);
  double norm = 0;
  for (float x : unit) norm += (double)x * x;
  EXPECT_NEAR(norm, 1.0, 1e-6);
}

TEST(BertConfig, RejectsWhatItCannotRun) {
  const nlohmann::json good = {{"model_type", "bert"}, {"vocab_size", 100}, {"hidden_size", 64},
                               {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 128},
                               {"max_position_embeddings", 32}, {"type_vocab_size", 2}, {"layer_norm_eps", 1e-12}};
  auto ok = bert_config_from_json(good);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->head_dim(), 16);
  auto with = [&](const char* key, const nlohmann::json& v) {
    nlohmann::json j = good;
    j[key] = v;
    return bert_config_from_json(j).ok();
  };
  EXPECT_FALSE(with("model_type", "llama"));
  EXPECT_FALSE(with("hidden_act", "relu"));
  EXPECT_FALSE(with("position_embedding_type", "relative_key"));
  EXPECT_FALSE(with("num_attention_heads", 5));  // 64 is not a multiple of 5
  EXPECT_FALSE(with("vocab_size", "100"));
  EXPECT_FALSE(with("hidden_size", -1));
  EXPECT_FALSE(with("layer_norm_eps", 0));
  nlohmann::json missing = good;
  missing.erase("intermediate_size");
  EXPECT_FALSE(bert_config_from_json(missing).ok());
  EXPECT_FALSE(EncoderModel::is_encoder_folder(std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf"));
  EXPECT_TRUE(EncoderModel::is_encoder_folder(kMiniLM));
}

class MiniLM : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = EncoderModel::open(kMiniLM);
    ASSERT_TRUE(m.ok()) << m.status().to_string() << " (run scripts/fetch_models)";
    model_ = std::move(*m);
  }
  std::unique_ptr<EncoderModel> model_;
};

TEST_F(MiniLM, LoadsAsSentenceTransformersDescribesIt) {
  const BertConfig& c = model_->config();
  EXPECT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.n_embd, 384);
  EXPECT_EQ(c.n_head, 12);
  EXPECT_EQ(model_->max_tokens(), 512);
  EXPECT_EQ(model_->pooling(), Pooling::Mean);
  EXPECT_TRUE(model_->normalize());
}

TEST_F(MiniLM, BatchedFastPathMatchesScalarReference) {
  ThreadPool pool(2);
  const std::vector<std::string> texts = {"Hello world", "The quick brown fox jumps over the lazy dog.",
                                          "Ünïcödé, café and 中文: accents and CJK characters in one sentence!"};
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& t : texts) seqs.push_back(model_->tokenizer().encode(t));
  auto fast = encoder_forward(*model_, seqs, pool);
  ASSERT_TRUE(fast.ok()) << fast.status().to_string();
  const int64_t E = model_->config().n_embd;
  int64_t row = 0;
  for (const auto& ids : seqs) {
    auto ref = encoder_forward_ref(*model_, ids);
    ASSERT_TRUE(ref.ok());
    const std::vector<float> got(fast->begin() + row * E, fast->begin() + (row + (int64_t)ids.size()) * E);
    EXPECT_LT(max_abs_diff(got.data(), ref->data(), ref->size()), 2e-3f);
    EXPECT_GT(cosine(got, *ref), 0.99999);
    row += (int64_t)ids.size();
  }
  // A sequence alone and inside a batch: the same states.
  auto alone = encoder_forward(*model_, {seqs[1]}, pool);
  ASSERT_TRUE(alone.ok());
  const int64_t off = (int64_t)seqs[0].size() * E;
  EXPECT_LT(max_abs_diff(alone->data(), fast->data() + off, alone->size()), 1e-5f);
}

TEST_F(MiniLM, EmbeddingsAreUnitVectorsAndRejectBadInputs) {
  ThreadPool pool(2);
  auto e = encoder_embed(*model_, {model_->tokenizer().encode("a sentence"), model_->tokenizer().encode("another")}, pool);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 2u);
  for (const auto& v : *e) {
    ASSERT_EQ(v.size(), 384u);
    double norm = 0;
    for (float x : v) norm += (double)x * x;
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  EXPECT_FALSE(encoder_forward(*model_, {{}}, pool).ok());
  EXPECT_FALSE(encoder_forward(*model_, {{101, 30522, 102}}, pool).ok());
  EXPECT_FALSE(encoder_forward(*model_, {std::vector<int32_t>(513, 1000)}, pool).ok());
  EXPECT_TRUE(encoder_forward(*model_, {std::vector<int32_t>(512, 1000)}, pool).ok());
}

}  // namespace
}  // namespace stride
