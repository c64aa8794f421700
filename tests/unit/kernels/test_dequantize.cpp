// Reference dequantization: hand-packed blocks with known values, simple
// quantizer round trips, and real/synthetic rows checked against the `gguf`
// Python package (tests/data/dequant_goldens.json).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "kernels/dequantize.h"
#include "kernels/quant_blocks.h"

namespace stride {
namespace {

using namespace quant;

std::vector<float> deq(DType t, const void* src, int64_t n) {
  std::vector<float> y((size_t)n, -12345.0f);
  dequantize_row(t, src, y.data(), n);
  return y;
}

// Packs 32 4-bit values the ggml way: element j low nibble, j+16 high nibble.
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
}
// Packs the fifth bits: bit j of the little-endian word is element j's bit 4.
void pack_qh(const int* q, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 32; ++j) h |= (uint32_t)((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &h, 4);
}

TEST(Dequantize, Q4_0HandBuilt) {
  BlockQ4_0 b[2];
  int q[2][32];
  for (int j = 0; j < 32; ++j) { q[0][j] = j % 16; q[1][j] = 15 - (j * 7) % 16; }
  b[0].d = fp32_to_fp16(0.5f);
  b[1].d = fp32_to_fp16(-2.0f);
  pack_nibbles(q[0], b[0].qs);
  pack_nibbles(q[1], b[1].qs);
  const auto y = deq(DType::Q4_0, b, 64);
  EXPECT_EQ(y[0], -4.0f);   // 0.5 * (0 - 8)
  EXPECT_EQ(y[15], 3.5f);   // 0.5 * (15 - 8)
  EXPECT_EQ(y[16], -4.0f);  // high nibble of qs[0]
  for (int i = 0; i < 64; ++i) {
    const float d = i < 32 ? 0.5f : -2.0f;
    EXPECT_EQ(y[(size_t)i], d * (float)(q[i / 32][i % 32] - 8)) << i;
  }
}

TEST(Dequantize, Q4_1HandBuilt) {
  BlockQ4_1 b;
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = (j * 5 + 3) % 16;
  b.d = fp32_to_fp16(0.25f);
  b.m = fp32_to_fp16(-1.0f);
  pack_nibbles(q, b.qs);
  const auto y = deq(DType::Q4_1, &b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[(size_t)j], 0.25f * (float)q[j] - 1.0f) << j;
}

TEST(Dequantize, Q5_0AndQ5_1HandBuilt) {
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = (j * 11 + 7) % 32;
  BlockQ5_0 b0;
  b0.d = fp32_to_fp16(0.125f);
  for (int j = 0; j < 16; ++j) b0.qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
  pack_qh(q, b0.qh);
  const auto y0 = deq(DType::Q5_0, &b0, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y0[(size_t)j], 0.125f * (float)(q[j] - 16)) << j;

  BlockQ5_1 b1;
  b1.d = fp32_to_fp16(0.5f);
  b1.m = fp32_to_fp16(3.0f);
  std::memcpy(b1.qs, b0.qs, 16);
  std::memcpy(b1.qh, b0.qh, 4);
  const auto y1 = deq(DType::Q5_1, &b1, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y1[(size_t)j], 0.5f * (float)q[j] + 3.0f) << j;
}

TEST(Dequantize, Q8_0HandBuilt) {
  BlockQ8_0 b;
  b.d = fp32_to_fp16(0.01f);
  for (int j = 0; j < 32; ++j) b.qs[j] = (int8_t)(j * 8 - 127);
  const auto y = deq(DType::Q8_0, &b, 32);
  const float d = fp16_to_fp32(fp32_to_fp16(0.01f));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[(size_t)j], d * (float)(j * 8 - 127)) << j;
}

// Inverse of ggml's get_scale_min_k4: 8 six-bit scales and mins into 12 bytes.
void pack_k_scales(const int* sc, const int* m, uint8_t* out) {
  for (int i = 0; i < 4; ++i) {
    out[i] = (uint8_t)((sc[i] & 63) | ((sc[i + 4] >> 4) << 6));
    out[i + 4] = (uint8_t)((m[i] & 63) | ((m[i + 4] >> 4) << 6));
    out[i + 8] = (uint8_t)((sc[i + 4] & 15) | ((m[i + 4] & 15) << 4));
  }
}

TEST(Dequantize, Q4_KHandBuilt) {
  BlockQ4_K b;
  const int sc[8] = {1, 63, 17, 32, 48, 5, 60, 33};
  const int m[8] = {0, 2, 63, 40, 31, 16, 47, 9};
  b.d = fp32_to_fp16(0.5f);
  b.dmin = fp32_to_fp16(0.25f);
  pack_k_scales(sc, m, b.scales);
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 13 + 5) % 16;
  // Sub-block 2c element l: low nibble of qs[32c + l]; 2c+1: high nibble.
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * c + l] = (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  const auto y = deq(DType::Q4_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    const float expect = 0.5f * (float)sc[s] * (float)q[e] - 0.25f * (float)m[s];
    EXPECT_FLOAT_EQ(y[(size_t)e], expect) << e;
  }
}

TEST(Dequantize, Q5_KHandBuilt) {
  BlockQ5_K b;
  const int sc[8] = {7, 63, 0, 21, 50, 38, 12, 1};
  const int m[8] = {63, 1, 2, 3, 44, 55, 16, 27};
  b.d = fp32_to_fp16(0.125f);
  b.dmin = fp32_to_fp16(0.5f);
  pack_k_scales(sc, m, b.scales);
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 29 + 3) % 32;
  std::memset(b.qh, 0, sizeof(b.qh));
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int a = q[64 * c + l], h = q[64 * c + 32 + l];
      b.qs[32 * c + l] = (uint8_t)((a & 15) | ((h & 15) << 4));
      b.qh[l] |= (uint8_t)(((a >> 4) << (2 * c)) | ((h >> 4) << (2 * c + 1)));
    }
  const auto y = deq(DType::Q5_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    EXPECT_FLOAT_EQ(y[(size_t)e], 0.125f * (float)sc[s] * (float)q[e] - 0.5f * (float)m[s]) << e;
  }
}

TEST(Dequantize, Q6_KHandBuilt) {
  BlockQ6_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = fp32_to_fp16(0.0625f);
  for (int i = 0; i < 16; ++i) b.scales[i] = (int8_t)(i * 17 - 128);
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 37 + 11) % 64;
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    uint8_t& ql = b.ql[64 * h + 32 * (k & 1) + l];
    ql |= (uint8_t)((q[e] & 15) << (k < 2 ? 0 : 4));
    b.qh[32 * h + l] |= (uint8_t)((q[e] >> 4) << (2 * k));
  }
  const auto y = deq(DType::Q6_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int scale = b.scales[e / 16];  // one scale per 16 consecutive elements
    EXPECT_FLOAT_EQ(y[(size_t)e], 0.0625f * (float)scale * (float)(q[e] - 32)) << e;
  }
}

TEST(Dequantize, Q2_KHandBuilt) {
  BlockQ2_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = fp32_to_fp16(0.5f);
  b.dmin = fp32_to_fp16(0.25f);
  for (int i = 0; i < 16; ++i) b.scales[i] = (uint8_t)((i % 16) | (((15 - i) % 16) << 4));
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 7 + e / 64) % 4;
    b.qs[32 * (e / 128) + e % 32] |= (uint8_t)(q[e] << (2 * ((e % 128) / 32)));
  }
  const auto y = deq(DType::Q2_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 16;  // scale (low nibble) and min (high nibble) per 16 elements
    EXPECT_EQ(y[(size_t)e], 0.5f * (float)s * (float)q[e] - 0.25f * (float)(15 - s)) << e;
  }
}

TEST(Dequantize, Q3_KHandBuilt) {
  BlockQ3_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = fp32_to_fp16(0.125f);
  int sc[16];
  for (int i = 0; i < 16; ++i) {
    sc[i] = (i * 23 + 5) % 64;  // stored with +32; the value is sc - 32
    if (i < 8) b.scales[i] |= (uint8_t)(sc[i] & 15);
    else b.scales[i - 8] |= (uint8_t)((sc[i] & 15) << 4);
    b.scales[8 + i % 4] |= (uint8_t)((sc[i] >> 4) << (2 * (i / 4)));
  }
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 5 + 3) % 8 - 4;  // [-4, 3]: low 2 bits, high bit set when q >= 0
    const int u = q[e] + 4, h = e / 128, k = (e % 128) / 32, l = e % 32;
    b.qs[32 * h + l] |= (uint8_t)((u & 3) << (2 * k));
    b.hmask[l] |= (uint8_t)((u >> 2) << (4 * h + k));
  }
  const auto y = deq(DType::Q3_K, &b, 256);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(y[(size_t)e], 0.125f * (float)(sc[e / 16] - 32) * (float)q[e]) << e;
}

TEST(Dequantize, Iq4AndMxfp4HandBuilt) {
  // The IQ4_NL grid and the E2M1 values (OCP MX spec) written out here.
  const int iq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = (j * 9 + 2) % 16;
  BlockIQ4_NL nl;
  nl.d = fp32_to_fp16(0.25f);
  pack_nibbles(q, nl.qs);
  const auto y_nl = deq(DType::IQ4_NL, &nl, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y_nl[(size_t)j], 0.25f * (float)iq4[q[j]]) << j;

  BlockIQ4_XS xs;
  std::memset(&xs, 0, sizeof(xs));
  xs.d = fp32_to_fp16(0.5f);
  const int ls[8] = {0, 63, 32, 31, 17, 48, 1, 40};
  for (int s = 0; s < 8; ++s) {
    xs.scales_l[s / 2] |= (uint8_t)((ls[s] & 15) << (4 * (s % 2)));
    xs.scales_h |= (uint16_t)((ls[s] >> 4) << (2 * s));
    pack_nibbles(q, xs.qs + 16 * s);
  }
  const auto y_xs = deq(DType::IQ4_XS, &xs, 256);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(y_xs[(size_t)e], 0.5f * (float)(ls[e / 32] - 32) * (float)iq4[q[e % 32]]) << e;

  for (int e8 : {0, 1, 2, 119, 127, 130, 254}) {
    BlockMXFP4 mx;
    mx.e = (uint8_t)e8;
    pack_nibbles(q, mx.qs);
    const auto y = deq(DType::MXFP4, &mx, 32);
    const float scale = std::ldexp(1.0f, e8 - 127);  // E8M0: 2^(e - 127)
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[(size_t)j], scale * e2m1[q[j]]) << e8 << " " << j;
  }
}

TEST(Dequantize, FloatTypes) {
  const float vals[8] = {0.0f, -1.5f, 3.140625f, 65504.0f, -0.00006103515625f, 1e-7f, 2.5f, -7.0f};
  std::vector<uint16_t> h(8), bf(8);
  for (int i = 0; i < 8; ++i) {
    h[(size_t)i] = fp32_to_fp16(vals[i]);
    uint32_t bits;
    std::memcpy(&bits, &vals[i], 4);
    bf[(size_t)i] = (uint16_t)(bits >> 16);
  }
  const auto yf = deq(DType::F32, vals, 8);
  const auto yh = deq(DType::F16, h.data(), 8);
  const auto yb = deq(DType::BF16, bf.data(), 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(yf[(size_t)i], vals[i]);
  EXPECT_EQ(yh[1], -1.5f);
  EXPECT_EQ(yh[2], 3.140625f);
  EXPECT_EQ(yh[3], 65504.0f);
  EXPECT_EQ(yh[4], -0.00006103515625f);
  EXPECT_NEAR(yh[5], 1e-7f, 3e-8f);  // half subnormal
  EXPECT_EQ(yb[6], 2.5f);
  EXPECT_EQ(yb[7], -7.0f);
}

// Minimal quantizers written from the format description (not ggml's code).
std::vector<uint8_t> quantize_legacy(DType t, const std::vector<float>& x) {
  const int64_t nb = (int64_t)x.size() / 32;
  const int64_t bb = dtype_info(t)->block_bytes;
  std::vector<uint8_t> out((size_t)(nb * bb));
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x.data() + 32 * i;
    float lo = xb[0], hi = xb[0], amax = 0;
    for (int j = 0; j < 32; ++j) {
      lo = std::min(lo, xb[j]);
      hi = std::max(hi, xb[j]);
      amax = std::max(amax, std::fabs(xb[j]));
    }
    uint8_t* o = out.data() + i * bb;
    int q[32];
    if (t == DType::Q8_0) {
      const uint16_t d = fp32_to_fp16(amax / 127);
      std::memcpy(o, &d, 2);
      for (int j = 0; j < 32; ++j) o[2 + j] = (uint8_t)(int8_t)std::lround(xb[j] / fp16_to_fp32(d));
    } else if (t == DType::Q4_0 || t == DType::Q5_0) {
      const int levels = t == DType::Q4_0 ? 8 : 16;
      const uint16_t d = fp32_to_fp16(amax / (levels - 1));
      std::memcpy(o, &d, 2);
      for (int j = 0; j < 32; ++j)
        q[j] = std::clamp((int)std::lround(xb[j] / fp16_to_fp32(d)) + levels, 0, 2 * levels - 1);
      if (t == DType::Q4_0) {
        pack_nibbles(q, o + 2);
      } else {
        pack_qh(q, o + 2);
        for (int j = 0; j < 16; ++j) o[6 + j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
      }
    } else {  // Q4_1
      const uint16_t d = fp32_to_fp16((hi - lo) / 15), m = fp32_to_fp16(lo);
      std::memcpy(o, &d, 2);
      std::memcpy(o + 2, &m, 2);
      for (int j = 0; j < 32; ++j)
        q[j] = std::clamp((int)std::lround((xb[j] - fp16_to_fp32(m)) / fp16_to_fp32(d)), 0, 15);
      pack_nibbles(q, o + 4);
    }
  }
  return out;
}

TEST(Dequantize, RoundTripLegacyQuants) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(1024);
  for (auto& v : x) v = nd(rng);
  struct Case { DType t; float max_step_frac; };
  // Max error is half a quantization step (step = range / levels) plus fp16 rounding.
  for (const Case c : {Case{DType::Q8_0, 0.5f / 127}, Case{DType::Q4_0, 0.5f / 7},
                       Case{DType::Q5_0, 0.5f / 15}, Case{DType::Q4_1, 0.5f / 15 * 2}}) {
    const auto bytes = quantize_legacy(c.t, x);
    const auto y = deq(c.t, bytes.data(), (int64_t)x.size());
    double err2 = 0, ref2 = 0;
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      for (int j = 0; j < 32; ++j) {
        const size_t i = b * 32 + j;
        EXPECT_NEAR(y[i], x[i], amax * c.max_step_frac * 1.02f + 1e-3f) << dtype_name(c.t) << " " << i;
        err2 += (y[i] - x[i]) * (y[i] - x[i]);
        ref2 += x[i] * x[i];
      }
    }
    EXPECT_LT(std::sqrt(err2 / ref2), c.t == DType::Q8_0 ? 0.01 : 0.15) << dtype_name(c.t);
  }
}

std::vector<uint8_t> from_hex(const std::string& s) {
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = (uint8_t)std::stoi(s.substr(2 * i, 2), nullptr, 16);
  return out;
}

TEST(Dequantize, MatchesGgufPythonGoldens) {
  const std::string dir = STRIDE_SOURCE_DIR;
  std::ifstream f(dir + "/tests/data/dequant_goldens.json");
  ASSERT_TRUE(f.good()) << "run scripts/oracles/dequant_goldens.py";
  const auto j = nlohmann::json::parse(f);
  int n_real = 0;
  for (const auto& row : j.at("rows")) {
    const std::string type = row.at("type");
    const int64_t n = row.at("n_cols");
    auto bytes = from_hex(row.at("bytes_hex"));
    const DType t = static_cast<DType>(row.at("type_id").get<uint32_t>());
    ASSERT_EQ((int64_t)bytes.size(), dtype_row_bytes(t, n)) << type;
    // Real rows: the golden bytes must be the model's bytes at that offset.
    const int64_t off = row.at("file_offset");
    if (off >= 0) {
      std::ifstream m(dir + "/models/" + row.at("model").get<std::string>(), std::ios::binary);
      if (m.good()) {
        std::vector<uint8_t> file_bytes(bytes.size());
        m.seekg(off);
        m.read(reinterpret_cast<char*>(file_bytes.data()), (std::streamsize)file_bytes.size());
        EXPECT_EQ(file_bytes, bytes) << row.at("tensor");
      }
      ++n_real;
    }
    const auto y = deq(t, bytes.data(), n);
    const auto& first = row.at("first64");
    for (size_t i = 0; i < first.size(); ++i)
      ASSERT_EQ(y[i], first[i].get<float>()) << type << " " << row.at("tensor") << " [" << i << "]";
    double sum = 0, abs_sum = 0;
    for (float v : y) { sum += v; abs_sum += std::fabs(v); }
    EXPECT_NEAR(sum, row.at("sum").get<double>(), 1e-9 * row.at("abs_sum").get<double>() + 1e-12) << type;
    EXPECT_NEAR(abs_sum, row.at("abs_sum").get<double>(), 1e-9 * abs_sum) << type;
  }
  EXPECT_GE(n_real, 18);
}

// Real rows of SmolLM2 quantized to Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 by
// llama.cpp / the gguf package, with gguf.quants.dequantize of every value
// (tests/data/generated/quant_types/rows.json, from scripts/oracles/quant_type_models.py).
TEST(Dequantize, LowBitTypesMatchGgufOnRealRows) {
  const std::string dir = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/quant_types/";
  std::ifstream f(dir + "rows.json");
  ASSERT_TRUE(f.good()) << dir << "rows.json missing: run scripts/setup";
  const auto j = nlohmann::json::parse(f);
  std::set<std::string> types;
  for (const auto& row : j.at("rows")) {
    const std::string type = row.at("type");
    const int64_t n = row.at("n_cols");
    const auto bytes = from_hex(row.at("bytes_hex"));
    const DType t = static_cast<DType>(row.at("type_id").get<uint32_t>());
    ASSERT_EQ((int64_t)bytes.size(), dtype_row_bytes(t, n)) << type;
    std::ifstream m(dir + row.at("model").get<std::string>(), std::ios::binary);
    ASSERT_TRUE(m.good()) << row.at("model");
    std::vector<uint8_t> file_bytes(bytes.size());
    m.seekg(row.at("file_offset").get<int64_t>());
    m.read(reinterpret_cast<char*>(file_bytes.data()), (std::streamsize)file_bytes.size());
    ASSERT_EQ(file_bytes, bytes) << row.at("tensor");
    const auto y = deq(t, bytes.data(), n);
    const auto& want = row.at("values");
    ASSERT_EQ((int64_t)want.size(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y[(size_t)i], want[(size_t)i].get<float>())
          << type << " " << row.at("model") << " " << row.at("tensor") << " row " << row.at("row") << " [" << i << "]";
    types.insert(type);
  }
  EXPECT_EQ(types, (std::set<std::string>{"IQ4_NL", "IQ4_XS", "MXFP4", "Q2_K", "Q3_K"}));
}

}  // namespace
}  // namespace stride
