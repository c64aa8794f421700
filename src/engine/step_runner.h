#pragma once
// One engine step end to end: KvManager::prepare -> Transformer::forward_batch
// -> KvManager::commit. The scheduler runs its batches through run_step;
// single-sequence callers (generation, scoring, tools) use run_sequence.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kv/kv_manager.h"
#include "model/transformer.h"

namespace stride {

// Runs between the forward pass and the commit, once every step's logits
// are written: keep[i] starts at steps[i].n, and lowering it for a
// may_truncate step keeps only that many of its tokens (speculative
// verification drops the rejected drafts; the KV state is then the one a
// step of keep[i] tokens would have left).
using BeforeCommit = std::function<void(std::span<int> keep)>;

// ResourceExhausted from prepare() leaves every sequence as it was; *unfit
// (when given) then lists the indices of the steps that do not fit.
Status run_step(Transformer& model, KvManager& kv, const SequenceStep* steps, int n_steps, ThreadPool& pool,
                std::vector<int>* unfit = nullptr, const BeforeCommit& before_commit = {});

// n tokens of seq at positions [kv.length(seq), + n), in steps of at most
// model.max_chunk() tokens. logits: [n, n_vocab] when all_logits, else
// [n_vocab] for the last token (null: none). On ResourceExhausted the chunks
// before the failing one stay committed.
Status run_sequence(Transformer& model, KvManager& kv, KvManager::SeqId seq, const int32_t* tokens, int n,
                    bool all_logits, float* logits, ThreadPool& pool);

}  // namespace stride
