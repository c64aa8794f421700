#pragma once
// RoPE scaling parameters -> the per-pair inverse frequencies and magnitude
// that every RoPE path reads (kernels/rope_table.h). Formulas follow
// transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils.py), in double.
#include <cstdint>

#include "core/status.h"
#include "kernels/rope_table.h"
#include "loader/rope_scaling.h"

namespace stride {

// base: theta of the layer; rot_dim: rotated dims per head (even);
// n_ctx_train: the model's context (the default original context);
// context: the tokens one sequence may hold in this engine. LongRoPE uses its
// long factors for the whole sequence when context > original context, else
// its short factors (transformers decides the same from the sequence length).
Expected<RopeTable> rope_table(const RopeScaling& s, double base, int rot_dim, bool neox,
                               int64_t n_ctx_train, int64_t context);

// True when rope_table's result depends on `context` (LongRoPE).
inline bool rope_depends_on_context(const RopeScaling& s) {
  return s.type == RopeScalingType::LongRope;
}

// The original context a scaling uses: its own, else the model's.
inline int64_t rope_original_context(const RopeScaling& s, int64_t n_ctx_train) {
  return s.original_context > 0 ? s.original_context : n_ctx_train;
}

}  // namespace stride
