// Pool versions of the element-wise ops: bit-identical to the serial fast
// kernels for 1, 2 and 7 threads (work is split at rows or 8-element
// boundaries), and close to the scalar references. Sizes straddle the
// serial/parallel threshold and leave odd tails.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/ops.h"
#include "kernels/ops_parallel.h"

namespace stride {
namespace {

std::vector<float> random_vec(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v((size_t)n);
  for (float& x : v) x = d(rng);
  return v;
}

void expect_identical(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                  double atol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + atol) << what << " at " << i;
}

struct Shape {
  int64_t rows, n;
};
// Small (serial on the caller), and large with odd row counts and lengths.
const std::vector<Shape> kShapes = {{1, 7}, {3, 64}, {1, 20001}, {37, 577}, {513, 64}, {2051, 9}};
const std::vector<int> kThreads = {1, 2, 7};

TEST(ParallelOps, RmsnormMatchesSerial) {
  for (int threads : kThreads) {
    ThreadPool pool(threads);
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.n << " threads=" << threads);
      const auto x = random_vec(s.rows * s.n, -3.0f, 3.0f, (uint32_t)(s.rows * 7 + s.n));
      const auto w = random_vec(s.n, 0.5f, 1.5f, (uint32_t)s.n);
      std::vector<float> par(x.size()), ser(x.size()), ref(x.size());
      rmsnorm(x.data(), w.data(), par.data(), s.rows, s.n, 1e-6f, pool);
      rmsnorm(x.data(), w.data(), ser.data(), s.rows, s.n, 1e-6f);
      rmsnorm_ref(x.data(), w.data(), ref.data(), s.rows, s.n, 1e-6f);
      expect_identical(par, ser, "rmsnorm pool vs serial");
      expect_close(par, ref, 1e-6, 1e-7, "rmsnorm pool vs ref");
      // In place (y aliases x), as for the q/k norms.
      auto inplace = x;
      rmsnorm(inplace.data(), w.data(), inplace.data(), s.rows, s.n, 1e-6f, pool);
      expect_identical(inplace, ser, "rmsnorm in place");
    }
  }
}

TEST(ParallelOps, RmsnormAddMatchesSerial) {
  for (int threads : kThreads) {
    ThreadPool pool(threads);
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.n << " threads=" << threads);
      const auto o = random_vec(s.rows * s.n, -3.0f, 3.0f, (uint32_t)(s.rows + s.n));
      const auto x = random_vec(s.rows * s.n, -10.0f, 10.0f, (uint32_t)(s.rows * 3 + s.n));
      const auto w = random_vec(s.n, 0.5f, 1.5f, (uint32_t)s.n + 9);
      auto po = o, px = x;
      rmsnorm_add(po.data(), w.data(), px.data(), s.rows, s.n, 1e-6f, pool);
      auto so = o, sx = x;
      rmsnorm(so.data(), w.data(), so.data(), s.rows, s.n, 1e-6f);
      add_inplace(sx.data(), so.data(), s.rows * s.n);
      expect_identical(po, so, "normed o");
      expect_identical(px, sx, "residual");
      // Independent oracle: scalar reference norm, then a plain add.
      std::vector<float> ro(o.size()), rx = x;
      rmsnorm_ref(o.data(), w.data(), ro.data(), s.rows, s.n, 1e-6f);
      for (size_t i = 0; i < rx.size(); ++i) rx[i] += ro[i];
      expect_close(px, rx, 1e-6, 1e-6, "residual vs ref");
    }
  }
}

TEST(ParallelOps, AddAndBiasMatchScalar) {
  for (int threads : kThreads) {
    ThreadPool pool(threads);
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.n << " threads=" << threads);
      const auto y0 = random_vec(s.rows * s.n, -2.0f, 2.0f, (uint32_t)(s.rows + 5 * s.n));
      const auto x = random_vec(s.rows * s.n, -2.0f, 2.0f, (uint32_t)(s.rows + 11 * s.n));
      const auto b = random_vec(s.n, -1.0f, 1.0f, (uint32_t)(s.n + 3));
      auto y = y0, want = y0;
      add_inplace(y.data(), x.data(), s.rows * s.n, pool);
      for (size_t i = 0; i < want.size(); ++i) want[i] += x[i];
      expect_identical(y, want, "add_inplace");
      y = y0;
      want = y0;
      add_rows(y.data(), b.data(), s.rows, s.n, pool);
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t i = 0; i < s.n; ++i) want[r * s.n + i] += b[i];
      expect_identical(y, want, "add_rows");
    }
  }
}

TEST(ParallelOps, GatedActivationsMatchSerial) {
  const std::vector<int64_t> sizes = {1, 7, 16383, 16385, 40003, 131072 + 5};
  for (int threads : kThreads) {
    ThreadPool pool(threads);
    for (int64_t n : sizes) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " threads=" << threads);
      const auto g = random_vec(n, -8.0f, 8.0f, (uint32_t)n);
      const auto u = random_vec(n, -2.0f, 2.0f, (uint32_t)n + 1);
      for (bool gelu : {false, true}) {
        std::vector<float> par(n), ser(n), ref(n);
        auto act = gelu ? static_cast<void (*)(const float*, const float*, float*, int64_t)>(gelu_tanh_mul)
                        : static_cast<void (*)(const float*, const float*, float*, int64_t)>(silu_mul);
        if (gelu) {
          gelu_tanh_mul(g.data(), u.data(), par.data(), n, pool);
          gelu_tanh_mul_ref(g.data(), u.data(), ref.data(), n);
        } else {
          silu_mul(g.data(), u.data(), par.data(), n, pool);
          silu_mul_ref(g.data(), u.data(), ref.data(), n);
        }
        act(g.data(), u.data(), ser.data(), n);
        expect_identical(par, ser, gelu ? "gelu pool vs serial" : "silu pool vs serial");
        expect_close(par, ref, 1e-5, 1e-6, gelu ? "gelu pool vs ref" : "silu pool vs ref");
        // out aliasing gate, as in the forward pass.
        auto inplace = g;
        if (gelu) gelu_tanh_mul(inplace.data(), u.data(), inplace.data(), n, pool);
        else silu_mul(inplace.data(), u.data(), inplace.data(), n, pool);
        expect_identical(inplace, ser, "in place");
      }
    }
  }
}

TEST(ParallelOps, RopeQkMatchesSerialAndRef) {
  struct Case {
    int64_t n_tok;
    int n_q, n_k, head_dim, rot_dim;
    float base;
  };
  const std::vector<Case> cases = {
      {3, 4, 1, 256, 256, 1e6f},     // gemma-like, serial
      {129, 4, 1, 256, 256, 1e4f},   // gemma-like, parallel
      {77, 9, 3, 64, 64, 1e4f},      // smollm2-like, odd token count
      {301, 3, 1, 18, 18, 1e4f},     // scalar tails
      {200, 2, 2, 64, 32, 5e5f},     // partial rotation
  };
  for (int threads : kThreads) {
    ThreadPool pool(threads);
    for (const Case& c : cases) {
      for (bool neox : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n_tok=" << c.n_tok << " hd=" << c.head_dim
                                          << " neox=" << neox << " threads=" << threads);
        std::vector<int32_t> pos((size_t)c.n_tok);
        for (int64_t t = 0; t < c.n_tok; ++t) pos[t] = (int32_t)(t * 37 + 1000 * (t % 3));
        const auto q0 = random_vec(c.n_tok * c.n_q * c.head_dim, -1.0f, 1.0f, (uint32_t)c.n_tok);
        const auto k0 = random_vec(c.n_tok * c.n_k * c.head_dim, -1.0f, 1.0f, (uint32_t)c.n_tok + 1);
        auto q = q0, k = k0;
        const RopeTable table = RopeTable::plain(c.base, c.rot_dim, 1.0, neox);
        rope_qk(q.data(), c.n_q, k.data(), c.n_k, pos.data(), c.n_tok, c.head_dim, table, pool);
        auto sq = q0, sk = k0, rq = q0, rk = k0;
        rope(sq.data(), pos.data(), c.n_tok, c.n_q, c.head_dim, table);
        rope(sk.data(), pos.data(), c.n_tok, c.n_k, c.head_dim, table);
        rope_ref(rq.data(), pos.data(), c.n_tok, c.n_q, c.head_dim, table);
        rope_ref(rk.data(), pos.data(), c.n_tok, c.n_k, c.head_dim, table);
        expect_identical(q, sq, "q pool vs serial");
        expect_identical(k, sk, "k pool vs serial");
        expect_close(q, rq, 0, 2e-6, "q vs ref");
        expect_close(k, rk, 0, 2e-6, "k vs ref");
        // Queries only (no keys).
        auto qo = q0;
        rope_qk(qo.data(), c.n_q, nullptr, 0, pos.data(), c.n_tok, c.head_dim, table, pool);
        expect_identical(qo, sq, "q alone");
      }
    }
  }
}

}  // namespace
}  // namespace stride
