#pragma once
// The AMX tile configuration (the 64-byte operand of ldtilecfg, palette 1),
// shared by the hardware tiles and their software model (tmul_model.h).
#include <cstdint>

namespace stride::tmul {

struct alignas(64) TileConfig {
  uint8_t palette = 0;  // 1: 8 tiles of at most 16 rows x 64 bytes
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile i
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

constexpr int kMaxRows = 16;
constexpr int kMaxColsb = 64;
constexpr int kTiles = 8;

// One tile's shape in cfg.
inline void set_tile(TileConfig& cfg, int tile, int rows, int colsb) {
  cfg.rows[tile] = (uint8_t)rows;
  cfg.colsb[tile] = (uint16_t)colsb;
}

}  // namespace stride::tmul
