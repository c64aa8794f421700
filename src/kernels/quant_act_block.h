#pragma once
// What every path's activation quantizer writes besides the int8 values
// (quant_act.h), so that all of them store the same bytes. Internal.
#include <cstdint>

#include "kernels/quant_act.h"

namespace stride::quant_act_detail {

// Scale and inverse scale of a block whose largest magnitude is amax. Below
// kTinyAmax, 127 / amax would overflow to inf (and 0 * inf is NaN), so such a
// block (all |x| < 1e-30) quantizes to zeros with scale 0.
inline constexpr float kTinyAmax = 1e-30f;
inline float block_scale(float amax) { return amax >= kTinyAmax ? amax / 127.0f : 0.0f; }
inline float block_inv_scale(float amax) { return amax >= kTinyAmax ? 127.0f / amax : 0.0f; }

// Zeroes the padding blocks of token t.
void clear_padding(QuantizedActs& a, int64_t t);

// Block b of token t: scale d, Σq = total, Σq over elements 0-15 = low.
inline void store_block_sums(QuantizedActs& a, int64_t t, int64_t b, float d, int total, int low) {
  const size_t k = (size_t)(t * a.row_blocks + b);
  const int high = total - low;
  a.d[k] = d;
  a.s[k] = d * (float)total;
  // Two int16 half-block sums in one int32 (low: elements 0-15, high: 16-31).
  a.hs[k] = (int32_t)(((uint32_t)(uint16_t)(int16_t)low) | ((uint32_t)high << 16));
  a.qs[k] = total;
}

}  // namespace stride::quant_act_detail
