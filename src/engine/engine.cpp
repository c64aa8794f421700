#include "engine/engine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/head_profile.h"
#include "engine/step_runner.h"
#include "kv/kv_pages_needed.h"
#include "kv/store/kv_pool.h"
#include "kv/scoped_sequence.h"
#include "model/op_profile.h"
#include "model/weight_prefetch.h"
#include "sampler/logprobs.h"
#include "core/process_memory.h"

namespace stride {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}


}  // namespace

int64_t kv_bytes_for_tokens(const ModelConfig& c, int64_t tokens, int page_size,
                            KvStorage storage) {
  const int64_t pages_per_layer = (tokens + page_size - 1) / page_size + 1;
  const KvPoolShape shape{c.n_head_kv, c.head_dim, c.head_dim_v, page_size, storage};
  return pages_per_layer * c.n_layer * shape.bytes_per_page();
}

KvManagerConfig kv_manager_config(const ModelConfig& c, int page_size) {
  KvManagerConfig kc;
  kc.n_layer = c.n_layer;
  kc.n_kv_heads = c.n_head_kv;
  kc.head_dim_k = c.head_dim;
  kc.head_dim_v = c.head_dim_v;
  kc.page_size = page_size;
  return kc;
}

int64_t peak_rss_bytes() { return process_status_bytes("VmHWM"); }

Expected<std::unique_ptr<Engine>> Engine::create(const EngineOptions& opts) {
  std::unique_ptr<Engine> e(new Engine());
  e->opts_ = opts;
  STRIDE_ASSIGN_OR_RETURN(auto source, open_model(opts.model_path, opts.rope_override));
  if (source->gguf()) {
    STRIDE_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::from_gguf(*source->gguf()));
  } else {
    // An HF folder: its tokenizer.json, if it has one (else ids only).
    auto tok = Tokenizer::from_hf_folder(opts.model_path);
    if (tok.ok()) {
      e->tokenizer_ = std::move(*tok);
    } else if (tok.status().code() != StatusCode::kNotFound) {
      return tok.status();
    }
  }
  prefetch_weights(*source, opts.show_progress);
  e->pool_ = std::make_unique<ThreadPool>(opts.threads);
  STRIDE_ASSIGN_OR_RETURN(e->model_, Transformer::create(std::move(source), opts.repack_weights, e->pool_.get(), opts.head_type));
  e->model_->set_max_chunk(opts.prefill_chunk);
  STRIDE_RETURN_IF_ERROR(e->model_->set_rope_context(opts.max_context));
  const ModelConfig& c = e->model_->config();
  LayerPolicyOverrides overrides;
  for (const std::string& text : opts.layer_policies) {
    STRIDE_RETURN_IF_ERROR(parse_layer_override(text, c.n_layer, overrides));
  }
  STRIDE_RETURN_IF_ERROR(check_dense_layers(opts.attention, c.n_layer));
  e->layer_policies_ = resolve_layer_policies(c, opts.attention, overrides);
  STRIDE_RETURN_IF_ERROR(apply_head_profiles(e->layer_policies_, model_identity(e->model_->source())));

  KvManagerConfig kc = kv_manager_config(c, opts.page_size);
  if (opts.kv_budget_bytes > 0) {
    kc.budget_bytes = opts.kv_budget_bytes;
  } else {
    // One sequence of max_context tokens under these policies in steps of
    // any size (a caller may raise the model's chunk, up to the whole
    // context in one step), with a page per layer of slack.
    const KvPoolShape shape{c.n_head_kv, c.head_dim, c.head_dim_v, opts.page_size, opts.kv_storage};
    const int64_t context = (opts.kv_tokens > 0 ? opts.kv_tokens : opts.max_context) + opts.prefill_chunk;
    const int64_t pages = pages_for_growth(e->layer_policies_, opts.page_size, 0, context, (int)context);
    kc.budget_bytes = (pages + c.n_layer) * shape.bytes_per_page();
  }
  kc.storage = opts.kv_storage;
  kc.layer_policies = e->layer_policies_;
  kc.summarize_every_layer = opts.kv_page_summaries;
  kc.prefix_cache = opts.prefix_cache;
  kc.cache_salt = opts.model_version.empty() ? opts.model_path : opts.model_version;
  kc.offload_bytes = opts.kv_offload_bytes;
  kc.offload_file = opts.kv_offload_file;
  STRIDE_ASSIGN_OR_RETURN(e->kv_, KvManager::create(kc));
  if (!opts.draft_model_path.empty()) {
    if (!e->tokenizer_) return InvalidArgument("a draft model needs a target with a vocabulary (GGUF)");
    DraftModelOptions dopts;
    dopts.path = opts.draft_model_path;
    dopts.max_context = opts.max_context;
    dopts.sequences = opts.draft_sequences;
    // As many tokens as the target's pool holds on every layer, and one
    // whole context (up to 32K) when windows let the target hold more.
    const KvStats ks = e->kv_->stats();
    dopts.pool_tokens = std::max<int64_t>(ks.pages_total / std::max(1, c.n_layer) * opts.page_size,
                                          std::min<int64_t>(opts.max_context + opts.prefill_chunk, 32768));
    dopts.page_size = opts.page_size;
    dopts.prefill_chunk = opts.prefill_chunk;
    dopts.repack_weights = opts.repack_weights;
    STRIDE_ASSIGN_OR_RETURN(e->draft_, DraftModel::create(dopts, *e->tokenizer_, *e->pool_));
  }
  return e;
}

Expected<KvManager::PrefixHit> Engine::start_sequence(const std::vector<int32_t>& prompt) {
  if (opts_.prefix_cache) return kv_->add_sequence_with_prefix(prompt);
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId id, kv_->add_sequence());
  return KvManager::PrefixHit{id, 0};
}

Expected<Engine::SuffixScores> Engine::score_suffix(const std::vector<int32_t>& ids) {
  if (ids.empty()) return InvalidArgument("score: no tokens");
  STRIDE_ASSIGN_OR_RETURN(const KvManager::PrefixHit hit, start_sequence(ids));
  ScopedSequence seq(*kv_, hit.seq);
  SuffixScores r;
  r.reused_tokens = hit.reused_tokens;
  const int n = (int)((int64_t)ids.size() - hit.reused_tokens);
  r.logits.resize((size_t)n * config().n_vocab);
  STRIDE_RETURN_IF_ERROR(run_sequence(*model_, *kv_, seq.id(), ids.data() + hit.reused_tokens, n, true,
                                         r.logits.data(), *pool_));
  return r;
}

Expected<std::vector<float>> Engine::score(const std::vector<int32_t>& ids) {
  if (ids.empty()) return InvalidArgument("score: no tokens");
  STRIDE_ASSIGN_OR_RETURN(KvManager::SeqId sid, kv_->add_sequence());
  ScopedSequence seq(*kv_, sid);
  std::vector<float> logits(ids.size() * (size_t)config().n_vocab);
  STRIDE_RETURN_IF_ERROR(
      run_sequence(*model_, *kv_, seq.id(), ids.data(), (int)ids.size(), true, logits.data(), *pool_));
  return logits;
}

bool Engine::take_token(int32_t id, DecodeLoop& loop, std::vector<int32_t>& history, GenerateResult& r,
                        const std::function<void(const std::string&)>& emit) {
  const DecodeLoop::Step s = loop.push(id);
  if (s.appended) {
    r.generated_ids.push_back(id);
    history.push_back(id);
  }
  emit(s.text);
  if (s.done) r.finish = s.reason;
  return s.done;
}

Expected<GenerateResult> Engine::generate(const std::vector<int32_t>& prompt,
                                          const GenerateOptions& opts,
                                          const std::function<void(const std::string&)>& on_text) {
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  if (!tokenizer_) return Unsupported("generation needs a tokenizer (GGUF model)");
  GenerateResult r;
  r.prompt_tokens = (int)prompt.size();
  const int n_vocab = config().n_vocab;

  auto t0 = Clock::now();
  STRIDE_ASSIGN_OR_RETURN(const KvManager::PrefixHit hit, start_sequence(prompt));
  ScopedSequence seq(*kv_, hit.seq);
  r.cached_tokens = (int)hit.reused_tokens;
  std::vector<float> logits(n_vocab);
  STRIDE_RETURN_IF_ERROR(run_sequence(*model_, *kv_, seq.id(), prompt.data() + hit.reused_tokens,
                                         (int)((int64_t)prompt.size() - hit.reused_tokens), false,
                                         logits.data(), *pool_));
  r.prefill_seconds = seconds_since(t0);
  const KvStats after_prompt = kv_->stats();
  auto out = decode_prompt(seq.id(), logits, prompt, opts, on_text, std::move(r));
  if (out) {
    const KvStats end = kv_->stats();
    out->decode_pages_read = end.pages_read - after_prompt.pages_read;
    out->decode_pages_present = end.pages_present - after_prompt.pages_present;
  }
  return out;
}

Expected<GenerateResult> Engine::decode_prompt(KvManager::SeqId seq_id, std::vector<float>& logits,
                                               const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                               const std::function<void(const std::string&)>& on_text,
                                               GenerateResult r) {
  const int n_vocab = config().n_vocab;
  Sampler sampler(opts.sampling);
  DecodeLoop loop(*tokenizer_, DecodeLimits{opts.max_tokens, 0, opts.ignore_eos, opts.stop}, (int64_t)prompt.size());
  std::vector<int32_t> history = prompt;
  auto emit = [&](const std::string& piece) {
    if (!piece.empty() && on_text) on_text(piece);
  };
  auto t1 = Clock::now();
  const double cpu1 = process_cpu_seconds();
  r.finish = FinishReason::Length;
  if (opts.speculative.mode != SpeculativeMode::Off) {
    STRIDE_RETURN_IF_ERROR(decode_speculative(seq_id, logits, opts, sampler, loop, history, r, emit));
  } else {
    for (int step = 0; step < opts.max_tokens; ++step) {
      const int32_t id = sampler.sample(logits.data(), n_vocab, history);
      const float logprob = token_logprobs(logits.data(), n_vocab, id, 0).logprob;
      const size_t kept = r.generated_ids.size();
      const bool done = take_token(id, loop, history, r, emit);
      if (r.generated_ids.size() > kept) r.logprobs.push_back(logprob);
      if (done) break;
      Status st = run_sequence(*model_, *kv_, seq_id, &id, 1, false, logits.data(), *pool_);
      if (!st.ok()) return st;
    }
  }
  emit(loop.finish());
  r.decode_seconds = seconds_since(t1);
  r.decode_cpu_seconds = process_cpu_seconds() - cpu1;
  r.text = loop.text();
  const KvStats ks = kv_->stats();
  r.peak_kv_bytes = ks.peak_pages_used * ks.bytes_per_page;
  return r;
}

}  // namespace stride
