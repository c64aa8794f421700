#pragma once
// What a sweep will cost, said before it starts: a sweep of a 0.5B model at
// 16K-32K runs for hours on two cores. Two short probes on the engine fit
// prefill time as a*L + b*L^2 (weights, then attention); a third measures a
// decoded token, whose attention grows as 2*b*L with the depth L.
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace stride {

struct SpeedProbe {
  double per_token = 0;     // a: seconds per prompt token, linear part
  double per_token_sq = 0;  // b: seconds per prompt token squared (attention)
  double per_decoded = 0;   // seconds per decoded token at a short depth
  int64_t probe_tokens = 0; // the longer probe's length

  double prefill_seconds(int64_t length) const {
    return per_token * (double)length + per_token_sq * (double)length * (double)length;
  }
  double decode_seconds(int64_t depth, int tokens) const {
    return tokens * (per_decoded + 2 * per_token_sq * (double)depth);
  }
};

// A trial left to run: its prompt and answer bound, and whether it decodes
// on another run's prefill of the same prompt (engine/shared_prefill.h),
// which it then does not compute.
struct PendingTrial {
  int64_t prompt_tokens = 0;
  int max_new_tokens = 0;
  bool shared_prefill = false;
};

struct SweepEstimate {
  double seconds = 0;        // every pending trial, shared prefills not counted
  double saved_seconds = 0;  // the prefills shared instead of computed again
  int shared_prefills = 0;
};

SweepEstimate estimate_sweep(const SpeedProbe& probe, const std::vector<PendingTrial>& trials);

// Probes with prefixes of `prompt` (up to 2048 tokens of it); `prompt` must
// hold at least 64 tokens.
Expected<SpeedProbe> probe_speed(Engine& engine, const std::vector<int32_t>& prompt);

}  // namespace stride
