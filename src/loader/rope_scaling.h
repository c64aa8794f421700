#pragma once
// RoPE scaling for long context, as the model files describe it (GGUF
// metadata and tensors, or config.json rope_scaling / rope_parameters).
// Parameters only: model/rope_frequencies.h turns them into the per-pair
// inverse frequencies every RoPE path uses.
#include <cstdint>
#include <string>
#include <vector>

namespace stride {

enum class RopeScalingType { None, Linear, Yarn, Llama3, LongRope };

const char* rope_scaling_name(RopeScalingType t);

struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  // linear, yarn, llama3: context extension factor (positions / factor).
  // longrope: only feeds the default attention factor.
  double factor = 1.0;
  // yarn, llama3, longrope: the pre-training context. 0: the model's context.
  int64_t original_context = 0;
  // yarn, longrope: multiplier of cos/sin. 0: derived from factor (and
  // mscale / mscale_all_dim for yarn) as transformers does.
  double attn_factor = 0.0;
  double mscale = 0.0, mscale_all_dim = 0.0;  // yarn (DeepSeek-style), 0: unset
  double beta_fast = 32.0, beta_slow = 1.0;   // yarn ramp bounds, in rotations
  bool truncate = true;  // yarn: round the ramp bounds to whole dimensions
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  // Per-pair divisors of the base inverse frequencies, [rot_dim / 2]:
  // a GGUF rope_freqs tensor (llama3 files) or LongRoPE's two sets.
  std::vector<double> freq_factors;
  std::vector<double> short_factor, long_factor;
  // An extra multiplier of the attention factor (GGUF rope.scaling.attn_factor
  // on a yarn file, as llama.cpp applies it).
  double extra_attn_factor = 1.0;

  bool scaled() const { return type != RopeScalingType::None; }
};

// The longest context the scaled model is meant to run: for linear and yarn
// the larger of the model's context and factor x original context (the
// model's context when no original is given); llama3 and longrope files give
// the extended context as the model's context itself.
int64_t rope_usable_context(const RopeScaling& s, int64_t n_ctx_train);

// One line for `stride info`: the type and its parameters ("none" unscaled).
std::string rope_scaling_summary(const RopeScaling& s);

}  // namespace stride
