#pragma once
// Prompt log-probs (scheduler_scoring.cpp): a scoring prefill chunk keeps
// every position's logits; after the step they become the prompt's log-probs.
#include "engine/step_runner.h"
#include "serving/scheduler_sequence.h"

namespace stride::serving {

void plan_prompt_rows(Scheduler::Sequence& s, SequenceStep& st, Engine& engine);
void score_prompt_rows(Scheduler::Sequence& s, const SequenceStep& st, Engine& engine);

}  // namespace stride::serving
