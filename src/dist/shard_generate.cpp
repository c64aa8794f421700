#include "dist/shard_generate.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "dist/decode_attention.h"
#include "dist/ring_attention.h"
#include "dist/shard_score.h"
#include "dist/shard_step.h"
#include "dist/shard_topk.h"
#include "kv/shard_layout.h"
#include "sampler/logprobs.h"

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

ShardedGenerator::ShardedGenerator(Private, Engine& engine, ShardGroup& group, KvManager::SeqId seq,
                                   const std::vector<int32_t>& prompt, const ShardGenerateOptions& opts)
    : engine_(engine),
      group_(group),
      seq_(engine.kv(), seq),
      opts_(opts),
      sampler_(opts.generate.sampling),
      loop_(*engine.tokenizer(),
            DecodeLimits{opts.generate.max_tokens, 0, opts.generate.ignore_eos, opts.generate.stop, opts.render_special},
            (int64_t)prompt.size()),
      history_(prompt),
      logits_((size_t)engine.config().n_vocab) {}

Expected<std::unique_ptr<ShardedGenerator>> ShardedGenerator::start(Engine& engine, ShardGroup& group,
                                                                    const std::vector<int32_t>& prompt,
                                                                    const ShardGenerateOptions& opts,
                                                                    bool* refused_together) {
  if (refused_together) *refused_together = false;
  if (opts.generate.speculative.mode != SpeculativeMode::Off)
    return Unsupported("speculative decoding is not supported across shard ranks");
  STRIDE_RETURN_IF_ERROR(check_sharded_policies(engine.layer_policies()));
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  if (!engine.tokenizer()) return Unsupported("generation needs a tokenizer (GGUF model)");
  KvManager& kv = engine.kv();
  const int ps = kv.config().page_size;
  const int64_t n = (int64_t)prompt.size();
  const ShardCostModel cost = engine_shard_cost(engine);
  STRIDE_ASSIGN_OR_RETURN(const KvShard shard,
                          every_rank_positions(n, group.world(), group.rank(), ps, opts.shard_tokens, cost));
  const int64_t cached_end = cached_shard_end(kv, prompt, shard.pos_begin, shard.pos_end);
  STRIDE_ASSIGN_OR_RETURN(const int64_t reuse_stop,
                          agree_on_prompt_and_reuse(group, prompt, opts.shard_tokens,
                                                    shard_boundaries(n, group.world(), ps, opts.shard_tokens, cost),
                                                    cached_end < shard.pos_end ? cached_end : INT64_MAX));
  // From the first position any rank must compute: a rank before it is wholly reused, one after it reuses nothing.
  const int64_t compute_from = std::clamp(reuse_stop, shard.pos_begin, shard.pos_end);
  // Every rank takes its part or every rank refuses the request, before any page travels (agree_on_admission).
  auto admit = [&](const Status& prepared) {
    Status mine = prepared;
    if (mine.ok() && group.rank() == group.world() - 1)  // the root keeps the generated tokens
      mine = decode_growth_fits(kv, engine.layer_policies(), shard.pos_begin, shard.pos_end,
                                opts.generate.max_tokens);
    Status agreed = agree_on_admission(group, mine);
    if (refused_together && group.ok()) *refused_together = !agreed.ok();
    return agreed;
  };
  const Expected<KvManager::SeqId> added = add_sequence_at(kv, shard.pos_begin, prompt, compute_from);
  if (!added) {
    STRIDE_RETURN_IF_ERROR(admit(added.status()));
    return added.status();
  }
  const KvManager::SeqId sid = *added;
  auto g = std::make_unique<ShardedGenerator>(Private{}, engine, group, sid, prompt, opts);
  g->r_.shard = shard;
  g->r_.reused_tokens = compute_from - shard.pos_begin;
  g->r_.set_reused_tokens = std::min(reuse_stop, n);
  for (int other = 0; other < group.world(); ++other) {
    STRIDE_ASSIGN_OR_RETURN(const KvShard s, shard_positions(n, group.world(), other, ps, opts.shard_tokens, cost));
    g->rank_begins_.push_back(s.pos_begin);
  }

  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  if (compute_from == shard.pos_end) {
    STRIDE_RETURN_IF_ERROR(admit(Status::Ok()));  // nothing to reserve: its whole shard is cached
    STRIDE_RETURN_IF_ERROR(relay_reused_shard(group, kv, sid, shard.pos_begin, shard.pos_end));
  } else {
    SequenceStep step;
    step.seq = sid;
    step.tokens = prompt.data() + compute_from;
    step.n = (int)(shard.pos_end - compute_from);
    step.logits = g->logits_.data();
    RingAttention ring(group, kv, sid, shard.pos_begin, shard.pos_end, compute_from);
    STRIDE_RETURN_IF_ERROR(run_shard_prefill(engine, step, ring, opts.prefill_chunk, admit));
  }
  g->r_.prefill_seconds = seconds_since(t0);
  g->r_.prefill_cpu_seconds = process_cpu_seconds() - cpu0;
  g->r_.prefill_bytes_sent = group.payload_bytes_sent();
  g->r_.payload_bytes_sent = group.payload_bytes_sent();
  return g;
}

Expected<ShardToken> ShardedGenerator::next(bool stop) {
  if (done_) return Internal("the sharded generation has ended");
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  const int root = group_.world() - 1, rank = group_.rank();
  const int n_vocab = engine_.config().n_vocab;
  ShardToken out;
  if (opts_.rank0_may_stop) {
    int32_t stop_flag = stop ? 1 : 0;
    STRIDE_RETURN_IF_ERROR(group_.broadcast(&stop_flag, sizeof stop_flag, 0));
    if (stop_flag) {
      done_ = out.done = true;
      r_.finish = FinishReason::Stop;
      return out;
    }
  }
  SampledToken tok;
  if (rank == root) {
    tok.id = sampler_.sample(logits_.data(), n_vocab, history_);
    tok.logprob = token_logprobs(logits_.data(), n_vocab, tok.id, 0).logprob;
  }
  STRIDE_RETURN_IF_ERROR(group_.broadcast(&tok, sizeof tok, root));
  const DecodeLoop::Step s = loop_.push(tok.id);
  out.id = tok.id;
  out.logprob = tok.logprob;
  out.appended = s.appended;
  out.text = s.text;
  if (s.appended) {
    r_.ids.push_back(tok.id);
    r_.logprobs.push_back(tok.logprob);
    history_.push_back(tok.id);
  }
  const int64_t n = (int64_t)history_.size() - (int64_t)r_.ids.size();  // prompt tokens
  const int k = generated_++;
  done_ = out.done = s.done || generated_ >= opts_.generate.max_tokens;
  if (s.done) r_.finish = s.reason;
  if (!done_) {  // the token's keys join the root's pages; the last token is never run
    if (rank == root) {
      SequenceStep step;
      step.seq = seq_.id();
      step.tokens = &tok.id;
      step.n = 1;
      step.logits = logits_.data();
      DecodeAttention attend_root(group_, engine_.kv(), seq_.id(), r_.shard.pos_begin, root, rank_begins_,
                                  &r_.decode_work);
      STRIDE_RETURN_IF_ERROR(run_shard_step(engine_, step, attend_root));
    } else {
      STRIDE_RETURN_IF_ERROR(answer_decode_step(group_, engine_.model(), engine_.kv(), seq_.id(), r_.shard.pos_begin,
                                                r_.shard.pos_end, 1, n + k, root, rank_begins_, engine_.pool(),
                                                &r_.decode_work));
    }
  }
  r_.decode_seconds += seconds_since(t0);
  r_.decode_cpu_seconds += process_cpu_seconds() - cpu0;
  r_.payload_bytes_sent = group_.payload_bytes_sent();
  return out;
}

std::string ShardedGenerator::finish_text() {
  std::string tail = loop_.finish();
  r_.text = loop_.text();
  return tail;
}

Expected<ShardGeneration> generate_sharded(Engine& engine, ShardGroup& group, const std::vector<int32_t>& prompt,
                                           const GenerateOptions& opts,
                                           const std::function<void(const std::string&)>& on_text,
                                           int prefill_chunk, int64_t shard_tokens) {
  ShardGenerateOptions so;
  so.generate = opts;
  so.prefill_chunk = prefill_chunk;
  so.shard_tokens = shard_tokens;
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<ShardedGenerator> g, ShardedGenerator::start(engine, group, prompt, so));
  auto emit = [&](const std::string& piece) {
    if (!piece.empty() && on_text) on_text(piece);
  };
  while (!g->done()) {
    STRIDE_ASSIGN_OR_RETURN(const ShardToken t, g->next());
    emit(t.text);
  }
  emit(g->finish_text());
  return std::move(g->result());
}

}  // namespace stride::dist
