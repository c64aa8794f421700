// The tile-unit macros shared by the AMX translation units (the tile code in
// *.inc files calls TMUL_*, which the software model defines otherwise).
// Include after the amx-tile target pragma. The tile intrinsics are asm
// statements that do not tell the compiler they touch memory: the barrier
// before a config or tile load keeps what was written for it first, the one
// after a store keeps the reads of what it wrote after it.
#pragma once
#include <immintrin.h>

#define TMUL_LOAD_CONFIG(cfg)      \
  do {                             \
    asm volatile("" ::: "memory"); \
    _tile_loadconfig(cfg);         \
  } while (0)
#define TMUL_RELEASE() _tile_release()
#define TMUL_ZERO(t) _tile_zero(t)
#define TMUL_LOAD(t, base, stride) \
  do {                             \
    asm volatile("" ::: "memory"); \
    _tile_loadd(t, base, stride);  \
  } while (0)
#define TMUL_STORE(t, base, stride) \
  do {                              \
    _tile_stored(t, base, stride);  \
    asm volatile("" ::: "memory");  \
  } while (0)
