// Opens the part of a kernel variant (a source in <module>/isa/, compiled per
// CPU target: stride_isa_variant in CMakeLists.txt) that is compiled for its
// target: include it after every header the file needs, and isa/end.h at the
// end. The headers before it stay at the build's baseline (AVX2), so the
// inline functions and templates they define get no AVX-512 copy that the
// linker could pick for code the AVX2 path runs. After it, include only
// headers written for variants (kernels/isa/*.h, attention/attention_tiles.h)
// whose own includes the file has already included above. No include guard:
// a file opens its region once.
#ifndef STRIDE_ISA_NS
#error "a kernel variant is compiled through stride_isa_variant (CMakeLists.txt), which defines its target"
#endif
#define STRIDE_ISA_PRAGMA_(text) _Pragma(#text)
#define STRIDE_ISA_TARGET_PRAGMA_(sets) STRIDE_ISA_PRAGMA_(GCC target(sets))
#pragma GCC push_options
STRIDE_ISA_TARGET_PRAGMA_(STRIDE_ISA_TARGET)
// GCC 12's 512-bit intrinsics pass _mm512_undefined_* as the merge source of
// unmasked builtins, which -W(maybe-)uninitialized reports at -O3 (GCC bug
// 105593, fixed in GCC 13): not a defect of the kernels.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
