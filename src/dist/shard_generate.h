#pragma once
// Generation from a prompt sharded by position over a shard group (`stride
// run --shard-world`, and `stride serve`'s shard set). Prefill as in scoring
// (shard_score.h): each rank runs its shard through every layer, the earlier
// shards' KV coming around the ring. The last rank, which holds the prompt's
// last position and so its logits, is the root of the decode: it samples each
// token, tells every rank (so each streams the same text), and runs it
// through the model, keeping its keys after its shard; at every layer the new
// query's partial attention is computed on every rank over the pages it holds
// and merged on the root by softmax state (decode_attention.h). A rank's pool
// holds its own shard (and on the root the generated tokens), never the whole
// sequence.
//
// Prefix cache per rank: each rank registers its shard's full pages under
// keys chained from position 0 and looks up its own run; the ranks agree on
// the first position any of them must compute, and only the suffix from
// there runs (a rank wholly reused computes nothing but still relays its
// pages around the ring, relay_reused_shard).
//
// A peer that dies or stalls fails the generation on every rank with the
// group's IoError; the rank's sequence is released either way.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"
#include "dist/sharded_decode.h"
#include "engine/decode_loop.h"
#include "engine/engine.h"
#include "kv/scoped_sequence.h"
#include "sampler/sampler.h"

namespace stride::dist {

struct ShardGeneration {
  KvShard shard;                  // this rank's prompt positions
  int64_t reused_tokens = 0;      // of which taken from this rank's prefix cache (from shard.pos_begin)
  int64_t set_reused_tokens = 0;  // the prompt's positions [0, this) that every rank took from its cache
  std::vector<int32_t> ids;       // generated tokens (every rank)
  std::vector<float> logprobs;    // [ids] each token's log-probability under the model (every rank)
  std::string text;
  FinishReason finish = FinishReason::Length;
  double prefill_seconds = 0;      // this rank's prefill step, wall time
  double prefill_cpu_seconds = 0;  // CPU time of this process in it (every thread)
  double decode_seconds = 0;
  double decode_cpu_seconds = 0;
  int64_t prefill_bytes_sent = 0;  // ShardGroup::payload_bytes_sent after the prefill
  int64_t payload_bytes_sent = 0;  // and at the end
  DecodeWork decode_work;          // this rank's share of the decode steps, every layer
};

struct ShardGenerateOptions {
  GenerateOptions generate;
  bool render_special = false;  // the text spells control tokens (DecodeLimits::render_special)
  // Rank 0 tells every rank before each token whether to go on (a served
  // request that was cancelled or timed out ends early on every rank). Every
  // rank must agree on it: it adds one 4-byte broadcast per token.
  bool rank0_may_stop = false;
  // This rank's prefill chunk (run_shard_prefill; 0: the engine's). A rank's
  // own choice, not sent with a job: the tokens do not depend on it.
  int prefill_chunk = 0;
  // The shard layout (shard_positions): 0 balanced, else runs of this many
  // tokens, so a longer prompt with the same prefix reuses each rank's
  // cached pages. Every rank must be given the same (checked).
  int64_t shard_tokens = 0;
};

// One token as every rank learns it.
struct ShardToken {
  int32_t id = 0;
  float logprob = 0.f;
  bool appended = false;  // part of the output (not an end-of-generation token)
  std::string text;       // text it releases
  bool done = false;      // the generation ended with it (finish reason in result())
};

// One sharded generation, a token at a time, so a caller (the server's
// scheduler) can interleave other work between tokens.
class ShardedGenerator {
  struct Private {};

 public:
  ShardedGenerator(Private, Engine& engine, ShardGroup& group, KvManager::SeqId seq,
                   const std::vector<int32_t>& prompt, const ShardGenerateOptions& opts);
  // Checks what every rank was given, then prefills this rank's shard.
  // Every rank takes its part or all refuse it together (a rank's pool that
  // cannot hold its shard fails the request on every rank at once, with an
  // error naming that rank): *refused_together (when given) is then set, and
  // the group, still in step, can take the next request.
  static Expected<std::unique_ptr<ShardedGenerator>> start(Engine& engine, ShardGroup& group,
                                                           const std::vector<int32_t>& prompt,
                                                           const ShardGenerateOptions& opts,
                                                           bool* refused_together = nullptr);
  // The next token: sampled on the root, then run through the model (every
  // rank answering for its pages). stop: rank 0's wish to end here (with
  // rank0_may_stop; ignored on the other ranks), which ends with done set
  // and no token.
  Expected<ShardToken> next(bool stop = false);
  bool done() const { return done_; }
  // The text held back until the end (call once, when done).
  std::string finish_text();
  ShardGeneration& result() { return r_; }

 private:
  Engine& engine_;
  ShardGroup& group_;
  ScopedSequence seq_;
  ShardGenerateOptions opts_;
  ShardGeneration r_;
  std::vector<int64_t> rank_begins_;  // where each rank's positions begin
  Sampler sampler_;
  DecodeLoop loop_;
  std::vector<int32_t> history_;  // prompt + generated: the sampler's penalties look at it
  std::vector<float> logits_;     // [n_vocab] the root's: of the last position so far
  int generated_ = 0;
  bool done_ = false;
};

// Every rank passes the same prompt (checked) and options; speculative
// decoding and top-k layers that select on prompt chunks are refused
// (shard_topk.h). on_text gets the text as it is
// decoded, on every rank.
// prefill_chunk, shard_tokens: ShardGenerateOptions's.
Expected<ShardGeneration> generate_sharded(Engine& engine, ShardGroup& group, const std::vector<int32_t>& prompt,
                                           const GenerateOptions& opts,
                                           const std::function<void(const std::string&)>& on_text,
                                           int prefill_chunk = 0, int64_t shard_tokens = 0);

}  // namespace stride::dist
