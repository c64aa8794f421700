#pragma once
// A user's override of the RoPE settings a model file gives (llama.cpp's
// --rope-scaling, --rope-scale, --yarn-orig-ctx, ...). The CLI reads it once
// into this struct; the loader applies it to the config it read.
#include <cstdint>
#include <optional>

#include "core/status.h"
#include "loader/model_config.h"
#include "loader/rope_scaling.h"

namespace stride {

struct RopeOverride {
  std::optional<RopeScalingType> type;       // --rope-scaling
  std::optional<double> factor;              // --rope-scale (context extension)
  std::optional<double> freq_scale;          // --rope-freq-scale: 1 / factor
  std::optional<int64_t> original_context;   // --yarn-orig-ctx
  std::optional<double> attn_factor;         // --yarn-attn-factor: magnitude of cos/sin
  std::optional<double> beta_fast, beta_slow;  // --yarn-beta-fast / --yarn-beta-slow
  std::optional<double> freq_base;           // --rope-freq-base (theta of the global layers)

  bool empty() const {
    return !type && !factor && !freq_scale && !original_context && !attn_factor && !beta_fast && !beta_slow &&
           !freq_base;
  }
};

// Replaces what the file says by what `o` gives. Unspecified type: the file's,
// or linear when the file has none and a factor is given (as llama.cpp).
// A type the file does not have starts from its defaults, keeping the file's
// factor and original context where it has them. Errors name the flag.
Status apply_rope_override(const RopeOverride& o, ModelConfig& c);

}  // namespace stride
