#include "engine/draft_model.h"

#include <algorithm>

#include "attention/layer_policies.h"
#include "engine/engine.h"
#include "engine/step_runner.h"
#include "loader/model_source.h"

namespace stride {

namespace {

Status check_same_vocabulary(const Tokenizer& draft, const Tokenizer& target, const std::string& path) {
  if (draft.n_vocab() != target.n_vocab())
    return InvalidArgument("draft model " + path + " has " + std::to_string(draft.n_vocab()) +
                           " tokens in its vocabulary, the target has " + std::to_string(target.n_vocab()) +
                           ": speculative decoding needs the same vocabulary");
  for (int32_t id = 0; id < target.n_vocab(); ++id)
    if (draft.token_to_piece_special(id) != target.token_to_piece_special(id))
      return InvalidArgument("draft model " + path + " maps token " + std::to_string(id) +
                             " to another piece than the target: speculative decoding needs the same vocabulary");
  return Status::Ok();
}

}  // namespace

Expected<std::unique_ptr<DraftModel>> DraftModel::create(const DraftModelOptions& opts, const Tokenizer& target_vocab,
                                                         ThreadPool& pool) {
  std::unique_ptr<DraftModel> d(new DraftModel(pool));
  STRIDE_ASSIGN_OR_RETURN(auto source, open_model(opts.path));
  if (!source->gguf()) return InvalidArgument("draft model " + opts.path + ": a GGUF file with its vocabulary is needed");
  STRIDE_ASSIGN_OR_RETURN(auto vocab, Tokenizer::from_gguf(*source->gguf()));
  STRIDE_RETURN_IF_ERROR(check_same_vocabulary(*vocab, target_vocab, opts.path));
  STRIDE_ASSIGN_OR_RETURN(d->model_, Transformer::create(std::move(source), opts.repack_weights, &pool));
  d->model_->set_max_chunk(opts.prefill_chunk);
  STRIDE_RETURN_IF_ERROR(d->model_->set_rope_context(opts.max_context));
  const ModelConfig& c = d->model_->config();
  KvManagerConfig kc = kv_manager_config(c, opts.page_size);
  kc.layer_policies = resolve_layer_policies(c, PolicySpec{});  // dense, or the model's own windows
  kc.prefix_cache = false;  // drafted tokens are cut back all the time
  const KvPoolShape shape{c.n_head_kv, c.head_dim, c.head_dim_v, opts.page_size, KvStorage::F16};
  // Dense pages for pool_tokens on every layer, and a page per layer of
  // slack per sequence (its open page); a full pool only ends drafting.
  const int64_t pages_per_layer = (opts.pool_tokens + opts.page_size - 1) / opts.page_size;
  kc.budget_bytes = (pages_per_layer + std::max(1, opts.sequences)) * c.n_layer * shape.bytes_per_page();
  STRIDE_ASSIGN_OR_RETURN(d->kv_, KvManager::create(kc));
  return d;
}

DraftSequence::DraftSequence(DraftSequence&& o) noexcept
    : model_(o.model_), seq_(o.seq_), held_(std::move(o.held_)) {
  o.seq_ = -1;
}

DraftSequence::~DraftSequence() { reset(); }

void DraftSequence::reset() {
  if (seq_ >= 0) model_->kv().remove_sequence(seq_);
  seq_ = -1;
  held_.clear();
}

// logits: [n_vocab] after the last of ids.
Status DraftSequence::feed(const int32_t* ids, int n, std::vector<float>& logits) {
  const Status st = run_sequence(model_->model(), model_->kv(), seq_, ids, n, false, logits.data(), model_->pool());
  if (!st.ok()) {
    reset();  // chunks before a failure stay committed: start over next time
    return st;
  }
  held_.insert(held_.end(), ids, ids + n);
  return Status::Ok();
}

// Makes the draft KV hold exactly `context` (cutting back to the common
// prefix, then feeding the rest; at least the last token is fed, for its logits).
Status DraftSequence::sync(const std::vector<int32_t>& context, std::vector<float>& logits) {
  KvManager& kv = model_->kv();
  size_t common = 0;
  while (common < held_.size() && common < context.size() && held_[common] == context[common]) ++common;
  common = std::min(common, context.size() - 1);
  if (seq_ >= 0 && common < held_.size()) {
    if (kv.truncate(seq_, (int64_t)common).ok()) {
      held_.resize(common);
    } else {
      reset();
    }
  }
  if (seq_ < 0) {
    STRIDE_ASSIGN_OR_RETURN(seq_, kv.add_sequence());
    held_.clear();
  }
  const size_t from = held_.size();
  return feed(context.data() + from, (int)(context.size() - from), logits);
}

Status DraftSequence::propose(const std::vector<int32_t>& context, int k, Sampler& sampler,
                              std::vector<int32_t>& drafts, std::vector<TokenDistribution>& q) {
  drafts.clear();
  q.clear();
  if (k <= 0 || context.empty()) return Status::Ok();
  const int n_vocab = model_->config().n_vocab;
  std::vector<float> logits((size_t)n_vocab);
  STRIDE_RETURN_IF_ERROR(sync(context, logits));
  std::vector<int32_t> history = context;
  for (int i = 0; i < k; ++i) {
    q.push_back(sampler.distribution(logits.data(), n_vocab, history));
    const int32_t id = sampler.draw(q.back());
    drafts.push_back(id);
    history.push_back(id);
    // A full draft pool ends this proposal early; the drafts so far stand.
    if (i + 1 < k && !feed(&id, 1, logits).ok()) break;
  }
  return Status::Ok();
}

}  // namespace stride
