#include "dist/shard_generate.h"

#include <chrono>
#include <cstring>

#include "dist/decode_attention.h"
#include "dist/ring_attention.h"
#include "dist/shard_score.h"
#include "dist/shard_step.h"
#include "dist/shard_topk.h"
#include "engine/decode_loop.h"
#include "kv/scoped_sequence.h"
#include "sampler/logprobs.h"
#include "sampler/sampler.h"

namespace stride::dist {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// What the root tells every rank after sampling: the token and its log-probability.
struct SampledToken {
  int32_t id = 0;
  float logprob = 0.f;
};

}  // namespace

Expected<ShardGeneration> generate_sharded(Engine& engine, ShardGroup& group, const std::vector<int32_t>& prompt,
                                           const GenerateOptions& opts,
                                           const std::function<void(const std::string&)>& on_text) {
  if (opts.speculative.mode != SpeculativeMode::Off)
    return Unsupported("speculative decoding is not supported across shard ranks");
  STRIDE_RETURN_IF_ERROR(check_sharded_policies(engine.layer_policies()));
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  if (!engine.tokenizer()) return Unsupported("generation needs a tokenizer (GGUF model)");
  KvManager& kv = engine.kv();
  const int n_vocab = engine.config().n_vocab;
  const int64_t n = (int64_t)prompt.size();
  const int root = group.world() - 1, rank = group.rank();
  ShardGeneration r;
  STRIDE_ASSIGN_OR_RETURN(r.shard, every_rank_positions(n, group.world(), rank, kv.config().page_size));
  STRIDE_RETURN_IF_ERROR(agree_on_prompt(group, prompt));
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId sid, kv.add_sequence_at(r.shard.pos_begin));
  ScopedSequence seq(kv, sid);

  std::vector<float> logits(n_vocab);  // the root's: of the last position so far
  SequenceStep step;
  step.seq = sid;
  step.tokens = prompt.data() + r.shard.pos_begin;
  step.n = (int)r.shard.tokens();
  step.logits = logits.data();
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = process_cpu_seconds();
  RingAttention ring(group, kv, sid, r.shard.pos_begin, r.shard.pos_end);
  STRIDE_RETURN_IF_ERROR(run_shard_step(engine, step, ring));
  r.prefill_seconds = seconds_since(t0);
  r.prefill_cpu_seconds = process_cpu_seconds() - cpu0;
  r.prefill_bytes_sent = group.payload_bytes_sent();

  Sampler sampler(opts.sampling);
  DecodeLoop loop(*engine.tokenizer(), DecodeLimits{opts.max_tokens, 0, opts.ignore_eos, opts.stop}, n);
  std::vector<int32_t> history = prompt;
  auto emit = [&](const std::string& piece) {
    if (!piece.empty() && on_text) on_text(piece);
  };
  std::vector<int64_t> rank_begins;  // where each rank's positions begin
  for (int other = 0; other < group.world(); ++other) {
    STRIDE_ASSIGN_OR_RETURN(const KvShard s, shard_positions(n, group.world(), other, kv.config().page_size));
    rank_begins.push_back(s.pos_begin);
  }
  DecodeAttention attend_root(group, kv, sid, r.shard.pos_begin, root, rank_begins);
  t0 = std::chrono::steady_clock::now();
  cpu0 = process_cpu_seconds();
  for (int k = 0; k < opts.max_tokens; ++k) {
    SampledToken tok;
    if (rank == root) {
      tok.id = sampler.sample(logits.data(), n_vocab, history);
      tok.logprob = token_logprobs(logits.data(), n_vocab, tok.id, 0).logprob;
    }
    STRIDE_RETURN_IF_ERROR(group.broadcast(&tok, sizeof tok, root));
    const DecodeLoop::Step s = loop.push(tok.id);
    if (s.appended) {
      r.ids.push_back(tok.id);
      r.logprobs.push_back(tok.logprob);
      history.push_back(tok.id);
    }
    emit(s.text);
    if (s.done) {
      r.finish = s.reason;
      break;
    }
    if (rank == root) {
      step.tokens = &tok.id;
      step.n = 1;
      STRIDE_RETURN_IF_ERROR(run_shard_step(engine, step, attend_root));
    } else {
      STRIDE_RETURN_IF_ERROR(answer_decode_step(group, engine.model(), kv, sid, r.shard.pos_begin,
                                                r.shard.pos_end, 1, n + k, root, rank_begins, engine.pool()));
    }
  }
  emit(loop.finish());
  r.decode_seconds = seconds_since(t0);
  r.decode_cpu_seconds = process_cpu_seconds() - cpu0;
  r.text = loop.text();
  r.payload_bytes_sent = group.payload_bytes_sent();
  return r;
}

}  // namespace stride::dist
