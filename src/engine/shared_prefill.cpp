// Engine::generate_sharing / generate_prefilled (shared_prefill.h).
#include "engine/shared_prefill.h"

#include <chrono>
#include <optional>

#include "engine/engine.h"
#include "engine/step_runner.h"
#include "kv/scoped_sequence.h"

namespace stride {

namespace {

using Clock = std::chrono::steady_clock;

// A layer's policy as it acts on prompt chunks: top-k with prefill=dense
// reads every page there, which is dense attention.
std::string prompt_chunk_policy(const PolicySpec& p) {
  if (p.kind == PolicyKind::TopK && p.prefill_dense) return policy_to_string(PolicySpec{});
  return policy_to_string(p);
}

void append_field(std::string& id, const char* name, const std::string& value) {
  id += '|';
  id += name;
  id += '=';
  id += value;
}

template <class T>
std::string optional_text(const std::optional<T>& v) {
  return v ? std::to_string(*v) : std::string("-");
}

}  // namespace

std::string Engine::prefill_identity() const {
  const RopeOverride& r = opts_.rope_override;
  std::string id = opts_.model_path;
  append_field(id, "rope", r.type ? std::to_string((int)*r.type) : std::string("-"));
  append_field(id, "rope_scale", optional_text(r.factor));
  append_field(id, "rope_freq_scale", optional_text(r.freq_scale));
  append_field(id, "yarn_orig_ctx", optional_text(r.original_context));
  append_field(id, "yarn_attn_factor", optional_text(r.attn_factor));
  append_field(id, "yarn_beta_fast", optional_text(r.beta_fast));
  append_field(id, "yarn_beta_slow", optional_text(r.beta_slow));
  append_field(id, "rope_freq_base", optional_text(r.freq_base));
  append_field(id, "chunk", std::to_string(model_->max_chunk()));
  append_field(id, "page", std::to_string(opts_.page_size));
  append_field(id, "kv", std::to_string((int)opts_.kv_storage));
  append_field(id, "threads", std::to_string(pool_->size()));
  append_field(id, "repack", std::to_string(opts_.repack_weights));
  append_field(id, "max_context", std::to_string(opts_.max_context));
  for (const PolicySpec& p : layer_policies_) append_field(id, "layer", prompt_chunk_policy(p));
  return id;
}

bool Engine::prefill_shareable(size_t prompt_tokens) const {
  if (prompt_tokens == 0 || draft_) return false;
  const int chunk = model_->max_chunk();
  const int last = (int)((prompt_tokens - 1) % (size_t)chunk) + 1;  // run_sequence's last step
  for (const PolicySpec& p : layer_policies_) {
    if (p.resident > 0) return false;  // a top-k hot set moves pages out of the pool
    if (topk_selects(p, last, false) || (prompt_tokens > (size_t)chunk && topk_selects(p, chunk, false))) return false;
  }
  return true;
}

Expected<GenerateResult> Engine::generate_sharing(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                                  const std::function<void(const std::string&)>& on_text,
                                                  PrefilledPrompt& out) {
  out = PrefilledPrompt{};
  if (!prefill_shareable(prompt.size())) return generate(prompt, opts, on_text);
  if (!tokenizer_) return Unsupported("generation needs a tokenizer (GGUF model)");
  GenerateResult r;
  r.prompt_tokens = (int)prompt.size();
  const auto t0 = Clock::now();
  const KvStats before = kv_->stats();
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId id, kv_->add_sequence());
  ScopedSequence seq(*kv_, id);
  std::vector<float> logits((size_t)config().n_vocab);
  STRIDE_RETURN_IF_ERROR(
      run_sequence(*model_, *kv_, seq.id(), prompt.data(), (int)prompt.size(), false, logits.data(), *pool_));
  r.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const KvStats after = kv_->stats();
  STRIDE_ASSIGN_OR_RETURN(out.kv, kv_->sessions().export_sequence(seq.id()));
  out.prompt = prompt;
  out.identity = prefill_identity();
  out.logits = logits;
  out.pages_read = after.pages_read - before.pages_read;
  out.pages_present = after.pages_present - before.pages_present;
  out.prefill_seconds = r.prefill_seconds;
  return decode_prompt(seq.id(), logits, prompt, opts, on_text, std::move(r));
}

bool Engine::takes_prefill(const PrefilledPrompt& in) const {
  if (in.empty() || in.identity != prefill_identity() || !prefill_shareable(in.prompt.size())) return false;
  return in.kv.summary_bytes > 0 || !keeps_summaries(kv_->config());
}

bool Engine::takes_prefill_of(const Engine& producer, size_t prompt_tokens) const {
  if (!prefill_shareable(prompt_tokens) || !producer.prefill_shareable(prompt_tokens)) return false;
  if (producer.prefill_identity() != prefill_identity()) return false;
  return keeps_summaries(producer.kv_->config()) || !keeps_summaries(kv_->config());
}

Expected<GenerateResult> Engine::generate_prefilled(const PrefilledPrompt& in, const GenerateOptions& opts,
                                                    const std::function<void(const std::string&)>& on_text) {
  if (!takes_prefill(in))
    return InvalidArgument("this engine's own prefill would differ from the shared one (another model, "
                           "chunking, KV layout or prompt-chunk attention)");
  if (!tokenizer_) return Unsupported("generation needs a tokenizer (GGUF model)");
  GenerateResult r;
  r.prompt_tokens = (int)in.prompt.size();
  const auto t0 = Clock::now();
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId id, kv_->sessions().import_sequence(in.kv));
  ScopedSequence seq(*kv_, id);
  std::vector<float> logits = in.logits;
  r.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return decode_prompt(seq.id(), logits, in.prompt, opts, on_text, std::move(r));
}

}  // namespace stride
