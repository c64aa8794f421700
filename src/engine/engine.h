#pragma once
// Single-sequence generation: prefill the prompt in chunks, then decode token
// by token with the sampler, stopping at EOS, a stop string or max_tokens.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_manager.h"
#include "attention/layer_policies.h"
#include "engine/decode_loop.h"
#include "engine/draft_model.h"
#include "engine/speculative.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "loader/rope_override.h"
#include "model/head_type.h"
#include "model/transformer.h"
#include "sampler/sampler.h"
#include "tokenizer/tokenizer.h"

namespace stride {

struct EngineOptions {
  std::string model_path;
  RopeOverride rope_override;      // replaces the file's RoPE settings (--rope-scaling ...)
  PolicySpec attention;             // user policy for the global layers
  std::vector<std::string> layer_policies;  // "A-B=POLICY" per-layer overrides
  int threads = 0;                  // 0: all cores
  int64_t kv_budget_bytes = 0;      // 0: sized for max_context tokens
  int64_t max_context = 8192;       // tokens one sequence may hold
  // Tokens of KV the pool is sized for when kv_budget_bytes is 0 (0:
  // max_context): a shard rank holds only its share of a longer context.
  int64_t kv_tokens = 0;
  int page_size = 32;
  int prefill_chunk = 256;
  KvStorage kv_storage = KvStorage::F16;  // f32: exact comparisons; int8: half the KV bytes
  bool show_progress = true;        // progress bar while loading (terminals only)
  // Quantized and float projections repacked for the fast kernels; off computes
  // from the mapped file's rows (slower; for comparisons and tiny hosts).
  bool repack_weights = true;
  // The output head requantized at load to a smaller K-quant (--head-type);
  // the embedding lookup keeps the file's rows.
  HeadType head_type = HeadType::File;
  // Prefix cache: full KV pages of earlier prompts are reused by later ones
  // sharing the prefix (generate, the serving scheduler).
  bool prefix_cache = true;
  std::string model_version;        // part of the prefix-cache keys; empty: model_path
  // Offload tier: evicted prefix pages are kept here and restored on a hit.
  int64_t kv_offload_bytes = 0;     // 0: no tier
  std::string kv_offload_file;      // empty: RAM; else a memory-mapped scratch file
  // Speculative decoding with a draft model of the same vocabulary (empty: none).
  std::string draft_model_path;
  int draft_sequences = 1;          // draft sequences at once (its KV pool: engine.cpp)
  // Key summaries on every layer, so a prompt this engine prefills can be
  // handed to top-k engines (shared_prefill.h); on any engine taking part.
  bool kv_page_summaries = false;
};

struct PrefilledPrompt;

struct GenerateOptions {
  int max_tokens = 128;
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop strings (excluded from the text)
  SamplingParams sampling;
  SpeculativeOptions speculative;  // off by default
};

struct GenerateResult {
  std::vector<int32_t> generated_ids;
  std::vector<float> logprobs;  // [generated_ids] each token's log-probability under the model (plain decoding)
  std::string text;
  FinishReason finish = FinishReason::Length;
  int prompt_tokens = 0;
  int cached_tokens = 0;  // prompt tokens taken from the prefix cache
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double decode_cpu_seconds = 0;  // every thread of the process, over the same steps
  int64_t peak_kv_bytes = 0;
  int64_t drafted_tokens = 0;   // speculative decoding: tokens proposed
  int64_t accepted_tokens = 0;  // of which the target kept
  int64_t verify_steps = 0;     // steps that verified at least one draft
  // Attention's KV page reads during the generation steps after the prompt (KvStats::pages_read and
  // pages_present, summed over layers), apart from the prompt's, for the bytes a decode step reads.
  int64_t decode_pages_read = 0;
  int64_t decode_pages_present = 0;
};

// Owns the model, tokenizer, thread pool and KV cache.
class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const EngineOptions& opts);

  const ModelConfig& config() const { return model_->config(); }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }  // null for HF folders without tokenizer.json
  Transformer& model() { return *model_; }
  KvManager& kv() { return *kv_; }
  ThreadPool& pool() { return *pool_; }
  const std::vector<PolicySpec>& layer_policies() const { return layer_policies_; }
  DraftModel* draft_model() { return draft_.get(); }  // null without --draft-model

  // on_text receives each newly completed piece of text as it is decoded.
  Expected<GenerateResult> generate(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                    const std::function<void(const std::string&)>& on_text);

  // Logits for every position of `ids` in one fresh sequence: [n, n_vocab].
  // Every position is computed (no prefix reuse); its full pages are cached.
  Expected<std::vector<float>> score(const std::vector<int32_t>& ids);

  // Logits of the positions after the longest cached prefix of `ids`:
  // logits is [n - reused_tokens, n_vocab] for positions [reused_tokens, n).
  struct SuffixScores {
    int64_t reused_tokens = 0;
    std::vector<float> logits;
  };
  Expected<SuffixScores> score_suffix(const std::vector<int32_t>& ids);

  // One prefill shared by several engines of the same model (shared_prefill.cpp).
  // Whether this engine's prefill of a prompt of n tokens is one another
  // engine could hand it, or hand out: no layer selects pages on a prompt
  // chunk and the KV has no top-k hot set.
  bool prefill_shareable(size_t prompt_tokens) const;
  // generate(), which also fills `out` with the prompt's sequence and logits
  // right after the prefill when prefill_shareable (else leaves it empty).
  Expected<GenerateResult> generate_sharing(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                            const std::function<void(const std::string&)>& on_text,
                                            PrefilledPrompt& out);
  // Whether `in` is byte for byte what this engine's own prefill of its prompt would make.
  bool takes_prefill(const PrefilledPrompt& in) const;
  // Whether a prefill `producer` shares of a prompt of n tokens would pass takes_prefill.
  bool takes_prefill_of(const Engine& producer, size_t prompt_tokens) const;
  // generate() of in.prompt on the imported sequence: decoding only. FailedPrecondition unless takes_prefill(in).
  Expected<GenerateResult> generate_prefilled(const PrefilledPrompt& in, const GenerateOptions& opts,
                                              const std::function<void(const std::string&)>& on_text);

 private:
  Engine() = default;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvManager> kv_;
  std::vector<PolicySpec> layer_policies_;
  std::unique_ptr<DraftModel> draft_;
  EngineOptions opts_;
  // A fresh sequence on the longest cached prefix (none when the cache is off).
  Expected<KvManager::PrefixHit> start_sequence(const std::vector<int32_t>& prompt);
  // generate() after the prefill: samples from `logits` (the prompt's last
  // position) and decodes on seq until done; r has the prefill's fields.
  Expected<GenerateResult> decode_prompt(KvManager::SeqId seq, std::vector<float>& logits,
                                         const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                         const std::function<void(const std::string&)>& on_text, GenerateResult r);
  // What a prefill's bytes depend on besides the prompt (shared_prefill.cpp).
  std::string prefill_identity() const;
  // Hands one sampled token to the decode loop (history, ids, text); true when generation is done.
  static bool take_token(int32_t id, DecodeLoop& loop, std::vector<int32_t>& history, GenerateResult& r,
                         const std::function<void(const std::string&)>& emit);
  // The decode loop of generate() after the prompt's logits (speculative_generate.cpp).
  Status decode_speculative(KvManager::SeqId seq, std::vector<float>& logits, const GenerateOptions& opts,
                            Sampler& sampler, DecodeLoop& loop, std::vector<int32_t>& history, GenerateResult& r,
                            const std::function<void(const std::string&)>& emit);
};

// The KV manager's shape for a model: layers, kv heads, head sizes, page size.
KvManagerConfig kv_manager_config(const ModelConfig& c, int page_size);

// Bytes of KV the pool needs so one sequence can hold `tokens` tokens on
// every layer (dense worst case), with page rounding.
int64_t kv_bytes_for_tokens(const ModelConfig& c, int64_t tokens, int page_size,
                            KvStorage storage = KvStorage::F16);

// Peak resident set size of this process, in bytes (VmHWM).
int64_t peak_rss_bytes();

}  // namespace stride
