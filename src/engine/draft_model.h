#pragma once
// A small model that drafts tokens for a larger target of the same
// vocabulary (speculative decoding). It has its own weights, its own KV
// manager and pages (dense attention unless the model's own layers are
// windowed; no prefix cache), and runs on the target's thread pool, on the
// thread that drives the target.
//
// Each target sequence that speculates holds one draft sequence
// (DraftSequence). Before drafting, the draft KV is cut back to the longest
// common prefix of what it holds and the target's tokens (KvManager::
// truncate); when a cut cannot be exact (a windowed layer released a page)
// the draft sequence starts over. Its accuracy only changes how many drafts
// are accepted, never the target's output.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kv/kv_manager.h"
#include "model/transformer.h"
#include "sampler/sampler.h"
#include "tokenizer/tokenizer.h"

namespace stride {

struct DraftModelOptions {
  std::string path;
  int64_t max_context = 8192;  // tokens one draft sequence may hold
  int64_t pool_tokens = 8192;  // tokens the draft's KV pool holds, all sequences together
  int sequences = 1;           // draft sequences expected at once (a page per layer of slack each)
  int page_size = 32;
  int prefill_chunk = 256;
  bool repack_weights = true;  // as EngineOptions::repack_weights
};

class DraftModel {
 public:
  // Refuses (InvalidArgument) a model whose vocabulary differs from the
  // target's: another size or another piece for some id.
  static Expected<std::unique_ptr<DraftModel>> create(const DraftModelOptions& opts, const Tokenizer& target_vocab,
                                                      ThreadPool& pool);

  const ModelConfig& config() const { return model_->config(); }
  KvManager& kv() { return *kv_; }
  Transformer& model() { return *model_; }
  ThreadPool& pool() { return pool_; }

 private:
  DraftModel(ThreadPool& pool) : pool_(pool) {}
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<KvManager> kv_;
  ThreadPool& pool_;
};

// One target sequence's drafting state on a DraftModel. Move-only; frees its
// draft pages when destroyed.
class DraftSequence {
 public:
  explicit DraftSequence(DraftModel& model) : model_(&model) {}
  DraftSequence(DraftSequence&& o) noexcept;
  DraftSequence& operator=(DraftSequence&&) = delete;
  DraftSequence(const DraftSequence&) = delete;
  DraftSequence& operator=(const DraftSequence&) = delete;
  ~DraftSequence();

  // Up to k tokens continuing `context`, each drawn from the draft's
  // distribution under `sampler`'s settings (greedy: its argmax), and those
  // distributions (q[i] for drafts[i]). ResourceExhausted when the draft
  // pool is full: no drafts this time, and the draft sequence is freed.
  Status propose(const std::vector<int32_t>& context, int k, Sampler& sampler, std::vector<int32_t>& drafts,
                 std::vector<TokenDistribution>& q);

  void reset();  // frees the draft pages
  bool holds_sequence() const { return seq_ >= 0; }  // false after a failure (its pages were freed)

 private:
  Status sync(const std::vector<int32_t>& context, std::vector<float>& logits);
  Status feed(const int32_t* ids, int n, std::vector<float>& logits);
  DraftModel* model_;
  KvManager::SeqId seq_ = -1;
  std::vector<int32_t> held_;  // the tokens the draft KV holds
};

}  // namespace stride
