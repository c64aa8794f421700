// The row tiles of the attention kernel (attention_tiles.h) for every KV
// storage type (f32, f16, int8 with per-token scales): against their scalar
// references, and the 4-, 2- and 1-row tiles against each other bit for bit,
// which is what makes a row's result independent of the rows it shares a
// tile with. Head sizes with and without vector tails, key counts that are
// and are not multiples of the tile widths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention/attention_tiles.h"
#include "attention/attention_tiles_ref.h"
#include "core/fp16.h"

namespace stride {

namespace {

using simd::F16Rows;
using simd::F32Rows;
using simd::I8Rows;

constexpr int kRows = 4;

template <class L>
struct Data {
  std::vector<typename L::Elem> rows;  // [n, d]
  std::vector<float> scales;           // [n]
  std::vector<float> q, o;             // [kRows, d]
  std::vector<float> p;                // [kRows, n]
};

template <class L>
typename L::Elem make_elem(std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  if constexpr (std::is_same_v<L, F32Rows>) return nd(rng);
  else if constexpr (std::is_same_v<L, F16Rows>) return fp32_to_fp16(nd(rng));
  else return (int8_t)std::uniform_int_distribution<int>(-127, 127)(rng);
}

template <class L>
Data<L> make(int n, int d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Data<L> x;
  for (int i = 0; i < n * d; ++i) x.rows.push_back(make_elem<L>(rng));
  for (int t = 0; t < n; ++t) x.scales.push_back(0.01f + 0.05f * u(rng));
  for (int i = 0; i < kRows * d; ++i) {
    x.q.push_back(nd(rng));
    x.o.push_back(nd(rng));
  }
  for (int i = 0; i < kRows * n; ++i) x.p.push_back(u(rng));
  return x;
}

// Rounding bound of a float dot product: a few ulps of sum |q_i k_i| (times the scale).
template <class L>
float dot_tol(const float* q, const typename L::Elem* k, float scale, int d) {
  double m = 0;
  for (int i = 0; i < d; ++i) m += std::fabs((double)q[i] * L::at(k, i));
  return (float)(1e-6 * m * (L::kScaled ? scale : 1.f)) + 1e-7f;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <class L>
void check_dot(int n, int d) {
  SCOPED_TRACE("d=" + std::to_string(d) + " n=" + std::to_string(n));
  const Data<L> x = make<L>(n, d, (uint32_t)(d * 100 + n));
  const float* ks = L::kScaled ? x.scales.data() : nullptr;
  std::vector<float> quad(kRows * n), pair(kRows * n), one(kRows * n);
  const float* q[kRows];
  float* sq[kRows];
  float* sp[kRows];
  float* s1[kRows];
  for (int r = 0; r < kRows; ++r) {
    q[r] = x.q.data() + r * d;
    sq[r] = quad.data() + r * n;
    sp[r] = pair.data() + r * n;
    s1[r] = one.data() + r * n;
  }
  tiles::dot_rows<L, 4>(q, x.rows.data(), ks, n, d, sq);
  tiles::dot_rows<L, 2>(q, x.rows.data(), ks, n, d, sp);
  tiles::dot_rows<L, 2>(q + 2, x.rows.data(), ks, n, d, sp + 2);
  for (int r = 0; r < kRows; ++r) tiles::dot_rows<L, 1>(q + r, x.rows.data(), ks, n, d, s1 + r);
  for (int r = 0; r < kRows; ++r) {
    std::vector<float> want(n);
    tiles::dot_rows_ref<L>(q[r], x.rows.data(), ks, n, d, want.data());
    for (int t = 0; t < n; ++t) {
      const float tol = dot_tol<L>(q[r], x.rows.data() + t * d, x.scales[t], d);
      EXPECT_NEAR(one[r * n + t], want[t], tol) << r << "," << t;
      EXPECT_TRUE(same_bits(quad[r * n + t], one[r * n + t])) << r << "," << t;
      EXPECT_TRUE(same_bits(pair[r * n + t], one[r * n + t])) << r << "," << t;
    }
  }
}

template <class L>
void check_pv(int n, int d) {
  SCOPED_TRACE("d=" + std::to_string(d) + " n=" + std::to_string(n));
  const Data<L> x = make<L>(n, d, (uint32_t)(d * 31 + n));
  const float alpha[kRows] = {0.7f, 0.25f, 1.f, 0.f};
  std::vector<float> quad = x.o, pair = x.o, one = x.o;
  const float* p[kRows];
  float* oq[kRows];
  float* op[kRows];
  float* o1[kRows];
  for (int r = 0; r < kRows; ++r) {
    p[r] = x.p.data() + r * n;
    oq[r] = quad.data() + r * d;
    op[r] = pair.data() + r * d;
    o1[r] = one.data() + r * d;
  }
  tiles::pv_rows<L, 4>(oq, alpha, p, x.rows.data(), n, d);
  tiles::pv_rows<L, 2>(op, alpha, p, x.rows.data(), n, d);
  tiles::pv_rows<L, 2>(op + 2, alpha + 2, p + 2, x.rows.data(), n, d);
  for (int r = 0; r < kRows; ++r) tiles::pv_rows<L, 1>(o1 + r, alpha + r, p + r, x.rows.data(), n, d);
  // Values up to 127 * n for int8 rows, a few for f32 / f16: relative to that.
  const float tol = 1e-6f * (L::kScaled ? 127.f : 8.f) * (n + 1);
  for (int r = 0; r < kRows; ++r) {
    std::vector<float> want(x.o.begin() + r * d, x.o.begin() + (r + 1) * d);
    tiles::pv_rows_ref<L>(want.data(), alpha[r], p[r], x.rows.data(), n, d);
    for (int i = 0; i < d; ++i) {
      EXPECT_NEAR(one[r * d + i], want[i], tol) << r << "," << i;
      EXPECT_TRUE(same_bits(quad[r * d + i], one[r * d + i])) << r << "," << i;
      EXPECT_TRUE(same_bits(pair[r * d + i], one[r * d + i])) << r << "," << i;
    }
  }
}

const int kDims[] = {3, 8, 20, 44, 64, 136, 256};

template <class L>
void check_all() {
  for (int d : kDims) {
    for (int n : {1, 2, 3, 4, 7, 16, 17, 32}) check_dot<L>(n, d);
    for (int n : {1, 5, 16, 32}) check_pv<L>(n, d);
  }
}

}  // namespace

TEST(AttentionTiles, F32RowsMatchScalarAndEachOther) { check_all<F32Rows>(); }
TEST(AttentionTiles, F16RowsMatchScalarAndEachOther) { check_all<F16Rows>(); }
TEST(AttentionTiles, Int8RowsMatchScalarAndEachOther) { check_all<I8Rows>(); }

// f16 rows widened in registers give the same bits as f32 rows holding the
// widened values: widening is exact.
TEST(AttentionTiles, F16RowsEqualTheirWidenedF32Rows) {
  const int n = 19, d = 68;
  const Data<F16Rows> x = make<F16Rows>(n, d, 5);
  std::vector<float> wide(x.rows.size());
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = fp16_to_fp32(x.rows[i]);
  std::vector<float> a(n), b(n);
  const float* q = x.q.data();
  float* pa = a.data();
  float* pb = b.data();
  tiles::dot_rows<F16Rows, 1>(&q, x.rows.data(), nullptr, n, d, &pa);
  tiles::dot_rows<F32Rows, 1>(&q, wide.data(), nullptr, n, d, &pb);
  for (int t = 0; t < n; ++t) EXPECT_TRUE(same_bits(a[t], b[t])) << t;
  std::vector<float> oa = x.o, ob = x.o;
  float* poa = oa.data();
  float* pob = ob.data();
  const float* p = x.p.data();
  const float alpha = 0.5f;
  tiles::pv_rows<F16Rows, 1>(&poa, &alpha, &p, x.rows.data(), n, d);
  tiles::pv_rows<F32Rows, 1>(&pob, &alpha, &p, wide.data(), n, d);
  for (int i = 0; i < d; ++i) EXPECT_TRUE(same_bits(oa[i], ob[i])) << i;
}

TEST(AttentionTiles, ExpShiftSumMatchesScalar) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (int n : {1, 7, 8, 13, 32}) {
    std::vector<float> s(n), got(n), want(n);
    for (float& v : s) v = nd(rng);
    if (n > 2) s[1] = -INFINITY;  // a masked key
    const float m = tiles::row_max(s.data(), n);
    const float sum = tiles::exp_shift_sum(s.data(), m, got.data(), n);
    const float want_sum = tiles::exp_shift_sum_ref(s.data(), m, want.data(), n);
    EXPECT_NEAR(sum, want_sum, 1e-6f * want_sum * 4) << n;
    for (int i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 4e-7f * want[i] + 1e-30f) << n << "," << i;
    if (n > 2) {
      EXPECT_EQ(got[1], 0.f);
    }
  }
}

// A page of n valid keys sums exactly like a longer page whose extra keys are
// masked: the denominator does not depend on how full the page was.
TEST(AttentionTiles, ExpShiftSumIgnoresMaskedPadding) {
  std::vector<float> s = {0.5f, -1.f, 2.f, 0.25f, 1.5f, -3.f, 0.f, 1.f, 0.75f, -0.5f, 2.5f};
  std::vector<float> padded = s;
  padded.resize(16, -INFINITY);
  std::vector<float> p(s.size()), pp(padded.size());
  const float a = tiles::exp_shift_sum(s.data(), 2.5f, p.data(), (int)s.size());
  const float b = tiles::exp_shift_sum(padded.data(), 2.5f, pp.data(), (int)padded.size());
  EXPECT_TRUE(same_bits(a, b));
  for (size_t i = 0; i < s.size(); ++i) EXPECT_TRUE(same_bits(p[i], pp[i])) << i;
}

}  // namespace stride
