#pragma once
// Re-rotating an already rotated vector: RoPE rotations compose, so rotating
// the query that carries position q by `delta` gives the query at q + delta.
// Cache-relative R-SWA uses delta = -rswa_sink_shift(...) for sink keys.
#include <cstdint>

#include "kernels/rope_table.h"

namespace stride {

// x: [head_dim]; pair i turns by delta * table.inv_freq[i], formed in double.
// The table's magnitude is not applied again: x already carries it.
void rope_rotate_by(float* x, int head_dim, int64_t delta, const RopeTable& table);

}  // namespace stride
