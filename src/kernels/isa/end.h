// Closes the target region that isa/begin.h opened.
#pragma GCC diagnostic pop
#pragma GCC pop_options
#undef STRIDE_ISA_TARGET_PRAGMA_
#undef STRIDE_ISA_PRAGMA_
