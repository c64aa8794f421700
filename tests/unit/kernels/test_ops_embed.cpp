// embed_rows over F32 / F16 / Q8_0 tables: fast vs reference vs hand-decoded
// values, and bounds checking.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "kernels/ops.h"

namespace stride {
namespace {

constexpr int64_t kVocab = 37;

// A table plus the f32 values it should decode to ([kVocab, cols]).
struct Table {
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
  TensorView view;
};

TensorView make_view(DType type, int64_t cols, const std::vector<uint8_t>& bytes) {
  TensorView v;
  v.name = "token_embd.weight";
  v.type = type;
  v.n_dims = 2;
  v.ne = {cols, kVocab, 1, 1};
  v.data = bytes.data();
  v.nbytes = (int64_t)bytes.size();
  return v;
}

Table make_f32(int64_t cols) {
  Table t;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  t.decoded.resize(kVocab * cols);
  for (float& x : t.decoded) x = d(rng);
  t.bytes.resize(t.decoded.size() * 4);
  std::memcpy(t.bytes.data(), t.decoded.data(), t.bytes.size());
  t.view = make_view(DType::F32, cols, t.bytes);
  return t;
}

Table make_f16(int64_t cols) {
  Table t;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  t.decoded.resize(kVocab * cols);
  t.bytes.resize(t.decoded.size() * 2);
  for (size_t i = 0; i < t.decoded.size(); ++i) {
    const uint16_t h = fp32_to_fp16(d(rng));
    std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    t.decoded[i] = fp16_to_fp32(h);
  }
  t.view = make_view(DType::F16, cols, t.bytes);
  return t;
}

// Q8_0 block: fp16 scale d, then 32 int8 q; x = d * q.
Table make_q8_0(int64_t cols) {
  Table t;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> q(-127, 127);
  const int64_t blocks = kVocab * cols / 32;
  t.bytes.resize(blocks * 34);
  t.decoded.resize(kVocab * cols);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint16_t d = fp32_to_fp16(0.01f * (float)(b % 7 + 1));
    uint8_t* blk = t.bytes.data() + b * 34;
    std::memcpy(blk, &d, 2);
    for (int j = 0; j < 32; ++j) {
      const int8_t v = (int8_t)q(rng);
      std::memcpy(blk + 2 + j, &v, 1);
      t.decoded[b * 32 + j] = fp16_to_fp32(d) * (float)v;
    }
  }
  t.view = make_view(DType::Q8_0, cols, t.bytes);
  return t;
}

void check_table(const Table& t, int64_t cols) {
  const std::vector<int32_t> ids = {0, 5, 36, 5, 17};
  const float scale = 8.0f;  // e.g. gemma's sqrt(n_embd)
  std::vector<float> fast(ids.size() * cols), ref(ids.size() * cols);
  ASSERT_TRUE(embed_rows(t.view, ids.data(), (int64_t)ids.size(), scale, fast.data()));
  ASSERT_TRUE(embed_rows_ref(t.view, ids.data(), (int64_t)ids.size(), scale, ref.data()));
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t c = 0; c < cols; ++c) {
      const float want = t.decoded[ids[i] * cols + c] * scale;
      ASSERT_NEAR(fast[i * cols + c], want, 1e-6f * std::fabs(want)) << "row " << i << " col " << c;
      ASSERT_NEAR(ref[i * cols + c], want, 1e-6f * std::fabs(want)) << "row " << i << " col " << c;
    }
  }
}

TEST(EmbedRows, F32) {
  for (int64_t cols : {1, 7, 64, 577}) check_table(make_f32(cols), cols);
}
TEST(EmbedRows, F16) {
  for (int64_t cols : {1, 7, 64, 577}) check_table(make_f16(cols), cols);
}
TEST(EmbedRows, Q8_0) {
  for (int64_t cols : {32, 64, 576}) check_table(make_q8_0(cols), cols);
}

TEST(EmbedRows, OutOfRangeIdsFailWithoutWriting) {
  const Table t = make_f32(64);
  for (int32_t bad : {-1, (int32_t)kVocab, 1 << 30}) {
    const std::vector<int32_t> ids = {1, bad};
    std::vector<float> out(2 * 64, 42.0f);
    EXPECT_FALSE(embed_rows(t.view, ids.data(), 2, 1.0f, out.data())) << bad;
    EXPECT_FALSE(embed_rows_ref(t.view, ids.data(), 2, 1.0f, out.data())) << bad;
    for (float v : out) ASSERT_EQ(v, 42.0f);
  }
}

TEST(EmbedRows, RowsBeyondTheBytesAreRejected) {
  Table t = make_f32(64);
  t.view.nbytes = 10 * 64 * 4;  // only 10 rows are really there
  const int32_t ok = 9, bad = 10;
  std::vector<float> out(64);
  EXPECT_TRUE(embed_rows(t.view, &ok, 1, 1.0f, out.data()));
  EXPECT_FALSE(embed_rows(t.view, &bad, 1, 1.0f, out.data()));
}

TEST(EmbedRows, InvalidTableFails) {
  TensorView empty;
  const int32_t id = 0;
  float out[4];
  EXPECT_FALSE(embed_rows(empty, &id, 1, 1.0f, out));
}

}  // namespace
}  // namespace stride
