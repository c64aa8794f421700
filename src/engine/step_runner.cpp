#include "engine/step_runner.h"

#include <algorithm>

namespace stride {

Status run_step(Transformer& model, KvManager& kv, const SequenceStep* steps, int n_steps, ThreadPool& pool,
                std::vector<int>* unfit, const BeforeCommit& before_commit) {
  STRIDE_ASSIGN_OR_RETURN(StepPlan plan, kv.prepare(std::span<const SequenceStep>(steps, (size_t)n_steps), unfit));
  STRIDE_RETURN_IF_ERROR(model.forward_batch(kv, plan, pool));
  if (before_commit) {
    std::vector<int> keep((size_t)n_steps);
    for (int i = 0; i < n_steps; ++i) keep[(size_t)i] = steps[i].n;
    before_commit(keep);
    for (int i = 0; i < n_steps; ++i) plan.seqs[(size_t)i].n_keep = keep[(size_t)i];
  }
  return kv.commit(plan);
}

Status run_sequence(Transformer& model, KvManager& kv, KvManager::SeqId seq, const int32_t* tokens, int n,
                    bool all_logits, float* logits, ThreadPool& pool) {
  if (n <= 0) return InvalidArgument("forward: no tokens");
  const int64_t n_vocab = model.config().n_vocab;
  for (int done = 0; done < n;) {
    const int m = std::min(model.max_chunk(), n - done);
    const bool last = done + m == n;
    SequenceStep step;
    step.seq = seq;
    step.tokens = tokens + done;
    step.n = m;
    step.all_logits = all_logits;
    // Intermediate chunks of a last-token-only call need no logits at all.
    step.logits = !logits ? nullptr : all_logits ? logits + (int64_t)done * n_vocab : (last ? logits : nullptr);
    STRIDE_RETURN_IF_ERROR(run_step(model, kv, &step, 1, pool));
    done += m;
  }
  return Status::Ok();
}

}  // namespace stride
