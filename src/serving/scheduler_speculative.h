#pragma once
// Speculative decoding's part of the scheduler's step
// (scheduler_speculative.cpp): a drafter per request that speculates, the
// decode step with its drafts, their verification between the forward pass
// and the commit, and the accepted tokens' emission.
#include <functional>
#include <span>
#include <vector>

#include "engine/step_runner.h"
#include "serving/scheduler_sequence.h"

namespace stride::serving {

class SpeculativeSteps {
 public:
  using Sequence = Scheduler::Sequence;

  // `opts` is the scheduler's own (it outlives this).
  SpeculativeSteps(Engine& engine, const SchedulerOptions& opts, Metrics& metrics)
      : engine_(engine), opts_(opts), metrics_(metrics) {}

  void start_drafter(Sequence& s);
  int plan_decode(Sequence& s, int draft_room, SequenceStep& st);
  void verify_step(std::span<int> keep, const std::vector<Sequence*>& owners);
  bool strip_drafts(std::vector<SequenceStep>& steps, const std::vector<Sequence*>& owners);
  // Records the verification, then hands each accepted token (s.next) to `after_logits`.
  void emit_verified(Sequence& s, const std::function<void(Sequence&)>& after_logits);

 private:
  Engine& engine_;
  const SchedulerOptions& opts_;
  Metrics& metrics_;
};

}  // namespace stride::serving
