#include "eval/sweep_cost.h"

#include <algorithm>

namespace stride {

namespace {

Expected<GenerateResult> timed_run(Engine& engine, const std::vector<int32_t>& prompt, int64_t length, int tokens) {
  GenerateOptions g;
  g.max_tokens = tokens;
  g.ignore_eos = true;
  g.sampling.temperature = 0.f;
  return engine.generate(std::vector<int32_t>(prompt.begin(), prompt.begin() + length), g, {});
}

}  // namespace

Expected<SpeedProbe> probe_speed(Engine& engine, const std::vector<int32_t>& prompt) {
  if (prompt.size() < 64) return InvalidArgument("speed probe: the prompt is too short to probe with");
  const int64_t long_len = std::min<int64_t>(2048, (int64_t)prompt.size());
  const int64_t short_len = std::max<int64_t>(16, long_len / 4);
  constexpr int kDecoded = 9;
  STRIDE_ASSIGN_OR_RETURN(GenerateResult shorter, timed_run(engine, prompt, short_len, kDecoded));
  STRIDE_ASSIGN_OR_RETURN(GenerateResult longer, timed_run(engine, prompt, long_len, 1));
  SpeedProbe p;
  p.probe_tokens = long_len;
  const double r1 = shorter.prefill_seconds / (double)short_len;
  const double r2 = longer.prefill_seconds / (double)long_len;
  p.per_token_sq = std::max(0.0, (r2 - r1) / (double)(long_len - short_len));
  p.per_token = p.per_token_sq > 0 ? r1 - p.per_token_sq * (double)short_len
                                   : (shorter.prefill_seconds + longer.prefill_seconds) / (double)(short_len + long_len);
  const int decoded = (int)shorter.generated_ids.size();
  p.per_decoded = decoded > 1 ? shorter.decode_seconds / (double)(decoded - 1) : 0;
  return p;
}

SweepEstimate estimate_sweep(const SpeedProbe& probe, const std::vector<PendingTrial>& trials) {
  SweepEstimate e;
  for (const PendingTrial& t : trials) {
    const double prefill = probe.prefill_seconds(t.prompt_tokens);
    e.seconds += probe.decode_seconds(t.prompt_tokens, t.max_new_tokens) + (t.shared_prefill ? 0 : prefill);
    if (t.shared_prefill) e.saved_seconds += prefill, ++e.shared_prefills;
  }
  return e;
}

}  // namespace stride
