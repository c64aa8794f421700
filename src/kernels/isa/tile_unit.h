#pragma once
// The AMX tile instructions as a kernel variant of level 2 calls them:
// Tiles::load<3>(base, stride) and so on, on the tile unit, or on its software
// model where the variant is amx_model (STRIDE_ISA_TILE_MODEL), so machines
// without AMX run the same kernel code, tile for tile. Include after
// isa/begin.h. Tile numbers are template arguments: the instructions take
// them as literals.
//
// Tile loads and stores tell the compiler they touch memory (GCC's tile
// intrinsics do not), so what was written for a load is written first and
// what a store wrote is read after it; likewise the barrier before a config.
#include <immintrin.h>

#include <cstdint>

#include "kernels/tmul_config.h"
#include "kernels/tmul_model.h"

#if STRIDE_ISA_LEVEL < 2
#error "the tile unit belongs to the level-2 variants (amx, amx_model)"
#endif

namespace stride::isa::STRIDE_ISA_NS {

#if STRIDE_ISA_TILE_MODEL
struct Tiles {
  static void load_config(const tmul::TileConfig& cfg) { tmul_model::load_config(cfg); }
  static void release() { tmul_model::release(); }
  template <int T>
  static void zero() { tmul_model::zero(T); }
  template <int T, int64_t Bytes = 0>
  static void load(const void* base, int64_t stride) { tmul_model::load(T, base, stride); }
  template <int T, int64_t Bytes = 0>
  static void store(void* base, int64_t stride) { tmul_model::store(T, base, stride); }
  // C += A (signed bytes) . B (unsigned bytes / signed bytes / bf16 pairs).
  template <int C, int A, int B>
  static void dot_su() { tmul_model::dot_su(C, A, B); }
  template <int C, int A, int B>
  static void dot_ss() { tmul_model::dot_ss(C, A, B); }
  template <int C, int A, int B>
  static void dot_bf16() { tmul_model::dot_bf16(C, A, B); }
};
#else
// GCC's tile intrinsics paste their tile numbers into the instruction text,
// so they take only literals: these statements print the template argument
// there instead ("n" operand, %c: the bare number), in both asm dialects.
struct Tiles {
  [[gnu::always_inline]] static void load_config(const tmul::TileConfig& cfg) {
    asm volatile("" ::: "memory");
    _tile_loadconfig(&cfg);
  }
  [[gnu::always_inline]] static void release() { _tile_release(); }
  template <int T>
  [[gnu::always_inline]] static void zero() {
    asm volatile("{tilezero\t%%tmm%c0|tilezero\ttmm%c0}" ::"n"(T));
  }
  // Bytes > 0: the instruction touches just the Bytes from base, and says so;
  // otherwise it clobbers all memory, which also keeps every local array
  // the caller indexes (a tile's float accumulators) in memory around it.
  template <int T, int64_t Bytes = 0>
  [[gnu::always_inline]] static void load(const void* base, int64_t stride) {
    if constexpr (Bytes > 0) {
      asm volatile("{tileloadd\t(%0,%1,1), %%tmm%c2|tileloadd\ttmm%c2, [%0+%1*1]}" ::"r"(base), "r"((long)stride),
                   "n"(T), "m"(*(const char(*)[Bytes])base));
    } else {
      asm volatile("{tileloadd\t(%0,%1,1), %%tmm%c2|tileloadd\ttmm%c2, [%0+%1*1]}" ::"r"(base), "r"((long)stride),
                   "n"(T)
                   : "memory");
    }
  }
  template <int T, int64_t Bytes = 0>
  [[gnu::always_inline]] static void store(void* base, int64_t stride) {
    if constexpr (Bytes > 0) {
      asm volatile("{tilestored\t%%tmm%c3, (%1,%2,1)|tilestored\t[%1+%2*1], tmm%c3}"
                   : "=m"(*(char(*)[Bytes])base)
                   : "r"(base), "r"((long)stride), "n"(T));
    } else {
      asm volatile("{tilestored\t%%tmm%c2, (%0,%1,1)|tilestored\t[%0+%1*1], tmm%c2}" ::"r"(base), "r"((long)stride),
                   "n"(T)
                   : "memory");
    }
  }
  template <int C, int A, int B>
  [[gnu::always_inline]] static void dot_su() {
    asm volatile("{tdpbsud\t%%tmm%c2, %%tmm%c1, %%tmm%c0|tdpbsud\ttmm%c0, tmm%c1, tmm%c2}" ::"n"(C), "n"(A), "n"(B));
  }
  template <int C, int A, int B>
  [[gnu::always_inline]] static void dot_ss() {
    asm volatile("{tdpbssd\t%%tmm%c2, %%tmm%c1, %%tmm%c0|tdpbssd\ttmm%c0, tmm%c1, tmm%c2}" ::"n"(C), "n"(A), "n"(B));
  }
  template <int C, int A, int B>
  [[gnu::always_inline]] static void dot_bf16() {
    asm volatile("{tdpbf16ps\t%%tmm%c2, %%tmm%c1, %%tmm%c0|tdpbf16ps\ttmm%c0, tmm%c1, tmm%c2}" ::"n"(C), "n"(A),
                 "n"(B));
  }
};
#endif

}  // namespace stride::isa::STRIDE_ISA_NS
