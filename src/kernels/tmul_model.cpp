#include "kernels/tmul_model.h"

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stride::tmul_model {
namespace {

struct Tiles {
  bool configured = false;
  int rows[tmul::kTiles] = {};
  int colsb[tmul::kTiles] = {};
  alignas(64) uint8_t data[tmul::kTiles][tmul::kMaxRows][tmul::kMaxColsb] = {};
};

std::atomic<uint64_t> g_dots{0};

Tiles& tiles() {
  thread_local Tiles t;
  return t;
}

[[noreturn]] void fault(const char* what) {
  std::fprintf(stderr, "tile model: %s (the hardware raises #UD)\n", what);
  std::abort();
}

Tiles& configured(int tile) {
  Tiles& t = tiles();
  if (!t.configured) fault("tile instruction before ldtilecfg");
  if (tile < 0 || tile >= tmul::kTiles || t.rows[tile] == 0) fault("tile not configured");
  return t;
}

float bf16_daz(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  if ((h & 0x7F80u) == 0) h &= 0x8000u;  // denormal (or zero): signed zero
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float ftz(float f) { return std::fabs(f) < FLT_MIN ? std::copysign(0.0f, f) : f; }

void check_dot_shapes(const Tiles& t, int c, int a, int b) {
  if (t.colsb[a] / 4 != t.rows[b] || t.colsb[a] % 4 != 0) fault("A's dwords per row differ from B's rows");
  if (t.colsb[b] != t.colsb[c] || t.rows[a] != t.rows[c]) fault("C's shape differs from A x B");
}

// What every tile dot checks and counts first; returns the tiles.
Tiles& start_dot(int c, int a, int b) {
  Tiles& t = configured(c);
  configured(a);
  configured(b);
  check_dot_shapes(t, c, a, b);
  g_dots.fetch_add(1, std::memory_order_relaxed);
  return t;
}

template <bool kSignedB>
void dot(int c, int a, int b) {
  Tiles& t = start_dot(c, a, b);
  const int n_cols = t.colsb[c] / 4;
  for (int m = 0; m < t.rows[c]; ++m) {
    for (int n = 0; n < n_cols; ++n) {
      int32_t sum;
      std::memcpy(&sum, &t.data[c][m][4 * n], 4);
      for (int k = 0; k < t.rows[b]; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int32_t x = (int8_t)t.data[a][m][4 * k + i];
          const int32_t w = kSignedB ? (int32_t)(int8_t)t.data[b][k][4 * n + i] : (int32_t)t.data[b][k][4 * n + i];
          sum = (int32_t)((uint32_t)sum + (uint32_t)(x * w));  // wraps, as the hardware does
        }
      }
      std::memcpy(&t.data[c][m][4 * n], &sum, 4);
    }
  }
}

}  // namespace

void dot_bf16(int c, int a, int b) {
  Tiles& t = start_dot(c, a, b);
  const int n_cols = t.colsb[c] / 4;
  for (int m = 0; m < t.rows[c]; ++m) {
    for (int n = 0; n < n_cols; ++n) {
      float sum;
      std::memcpy(&sum, &t.data[c][m][4 * n], 4);
      for (int k = 0; k < t.rows[b]; ++k)
        for (int i = 0; i < 2; ++i)
          sum = ftz(std::fma(bf16_daz(&t.data[a][m][4 * k + 2 * i]), bf16_daz(&t.data[b][k][4 * n + 2 * i]), sum));
      std::memcpy(&t.data[c][m][4 * n], &sum, 4);
    }
  }
}

void load_config(const tmul::TileConfig& cfg) {
  if (cfg.palette != 1) fault("palette other than 1");
  Tiles& t = tiles();
  t = Tiles{};
  for (int i = 0; i < tmul::kTiles; ++i) {
    const int rows = cfg.rows[i], colsb = cfg.colsb[i];
    if ((rows == 0) != (colsb == 0) || rows > tmul::kMaxRows || colsb > tmul::kMaxColsb)
      fault("tile shape out of palette 1");
    t.rows[i] = rows;
    t.colsb[i] = colsb;
  }
  t.configured = true;
}

void release() { tiles() = Tiles{}; }

void zero(int tile) {
  Tiles& t = configured(tile);
  std::memset(t.data[tile], 0, sizeof(t.data[tile]));
}

void load(int tile, const void* base, int64_t stride) {
  Tiles& t = configured(tile);
  std::memset(t.data[tile], 0, sizeof(t.data[tile]));
  for (int r = 0; r < t.rows[tile]; ++r)
    std::memcpy(t.data[tile][r], (const uint8_t*)base + r * stride, (size_t)t.colsb[tile]);
}

void store(int tile, void* base, int64_t stride) {
  Tiles& t = configured(tile);
  for (int r = 0; r < t.rows[tile]; ++r)
    std::memcpy((uint8_t*)base + r * stride, t.data[tile][r], (size_t)t.colsb[tile]);
}

void dot_su(int c, int a, int b) { dot<false>(c, a, b); }
void dot_ss(int c, int a, int b) { dot<true>(c, a, b); }
uint64_t dots_run() { return g_dots.load(); }

}  // namespace stride::tmul_model
