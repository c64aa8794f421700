// `stride score`: one forward pass over token ids; writes the logits of every
// position (raw little-endian f32, [n_tokens, n_vocab]) for oracle comparisons.
// With --shard-world N every rank of a shard set runs the same command with
// its --shard-rank; rank 0 writes the file (dist/shard_score.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/head_type_option.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "cli/shard_options.h"
#include "kv/shard_layout.h"
#include "model/reference_forward.h"
#ifdef STRIDE_WITH_GLOO
#include "dist/ring_prefill.h"
#include "dist/shard_score.h"
#include "dist/shard_topk.h"
#endif

namespace stride::cli {

namespace {

struct ScoreArgs {
  ModelRunOptions model;
  std::string ids;
  std::string ids_file;
  std::string out;
  int chunk = 256;
  bool reference = false;
  ShardArgs shard;
};

int write_logits(const std::string& path, const std::vector<float>& logits) {
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) return fail("cannot write " + path);
  const size_t written = std::fwrite(logits.data(), sizeof(float), logits.size(), out);
  const bool closed = std::fclose(out) == 0;
  if (written != logits.size() || !closed) return fail("short write to " + path);
  return 0;
}

#ifdef STRIDE_WITH_GLOO
// This rank's share of a sharded score; rank 0 writes the logits.
// shard_tokens: the resolved layout (kv/shard_layout.h).
int score_shard(const ScoreArgs& a, Engine& engine, const std::vector<int32_t>& ids, int64_t shard_tokens) {
  // Refused on every rank before any rank connects, so none waits for a peer that gave up.
  if (Status st = dist::check_sharded_policies(engine.layer_policies()); !st.ok()) return fail(st);
  auto group = connect_shard_group(a.shard);
  if (!group) return fail(group.status());
  const dist::ShardGroup& go = **group;
  auto r = dist::score_sharded(engine, **group, ids, a.shard.chunk, shard_tokens);
  if (!r) return fail(r.status());
  if (go.rank() == 0 && write_logits(a.out, r->logits) != 0) return 1;
  // The ring's payload over every layer (ring_prefill.h): the pages of earlier ranks the next rank sees.
  const int ps = engine.kv().config().page_size;
  std::vector<dist::KvShard> shards;
  for (int rank = 0; rank < go.world(); ++rank) {
    auto s = dist::shard_positions((int64_t)ids.size(), go.world(), rank, ps, shard_tokens,
                                   dist::engine_shard_cost(engine));
    if (!s) return fail(s.status());
    shards.push_back(*s);
  }
  int64_t ring_bytes = 0;
  for (const PolicySpec& p : engine.layer_policies())
    ring_bytes += dist::ring_prefill_bytes(p, shards, go.rank(), ps, engine.kv().pool().page_image_bytes());
  nlohmann::json j;
  j["n_tokens"] = ids.size();
  j["n_vocab"] = engine.config().n_vocab;
  j["shard_rank"] = go.rank();
  j["shard_world"] = go.world();
  j["pos_begin"] = r->shard.pos_begin;
  j["pos_end"] = r->shard.pos_end;
  j["shard_tokens"] = shard_tokens;
  j["forward_seconds"] = r->forward_seconds;
  j["forward_cpu_seconds"] = r->forward_cpu_seconds;
  j["ring_seconds"] = r->ring_seconds;
  j["wait_seconds"] = r->wait_seconds;
  j["payload_bytes_sent"] = r->payload_bytes_sent;
  j["logits_bytes_sent"] = r->logits_bytes_sent;
  j["ring_bytes"] = ring_bytes;
  j["n_layer"] = engine.config().n_layer;
  const KvStats ks = engine.kv().stats();
  j["peak_kv_bytes"] = ks.peak_pages_used * ks.bytes_per_page;  // this rank's pool pages at their most
  j["pool_kv_bytes"] = ks.pages_total * ks.bytes_per_page;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
#endif

int score(const ScoreArgs& a) {
  if (a.ids.empty() == a.ids_file.empty()) return fail("give exactly one of --ids or --ids-file");
  std::string text = a.ids;
  if (!a.ids_file.empty()) {
    FILE* f = std::fopen(a.ids_file.c_str(), "rb");
    if (!f) return fail("cannot open " + a.ids_file);
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  auto ids = parse_ids(text);
  if (!ids) return fail(ids.status());
  if (ids->empty()) return fail("no token ids given");
  auto opts = to_engine_options(a.model, (int64_t)ids->size());
  if (!opts) return fail(opts.status());
  opts->prefill_chunk = a.chunk;
  // With a rendezvous even one rank runs the sharded path (a baseline for its timings).
  const bool sharded = a.shard.sharded();
  if (Status st = check_shard_args(a.shard); !st.ok()) return fail(st);
  if (sharded && a.reference) return fail("--reference runs on one host only");
  // The layout from the context: the prompt's own length, as scoring runs one prompt.
  const int64_t shard_tokens =
      resolve_shard_tokens(a.shard.shard_tokens, opts->max_context, a.shard.world, opts->page_size);
#ifdef STRIDE_WITH_GLOO
  if (sharded)  // a rank's pool holds its shard (at most the largest any model's cut gives), not the whole prompt
    opts->kv_tokens = largest_shard_tokens((int64_t)ids->size(), a.shard.world, opts->page_size, shard_tokens);
#endif
  auto engine = Engine::create(*opts);
  if (!engine) return fail(engine.status());
#ifdef STRIDE_WITH_GLOO
  if (sharded) return score_shard(a, **engine, *ids, shard_tokens);
#endif
  auto logits = a.reference
                    ? reference_forward((*engine)->model(), (*engine)->layer_policies(), *ids)
                    : (*engine)->score(*ids);
  if (!logits) return fail(logits.status());
  if (write_logits(a.out, *logits) != 0) return 1;
  nlohmann::json j;
  j["n_tokens"] = ids->size();
  j["n_vocab"] = (*engine)->config().n_vocab;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

void add_score_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ScoreArgs>();
  CLI::App* cmd = app.add_subcommand("score", "Write the logits of every position of a token sequence");
  cmd->add_option("--model,-m", args->model.model, "GGUF file or HF folder")->required();
  add_rope_options(cmd, args->model.rope);
  add_head_type_option(cmd, args->model.head_type);
  cmd->add_option("--ids", args->ids, "token ids, \"1 2 3\"");
  cmd->add_option("--ids-file", args->ids_file, "file of token ids");
  cmd->add_option("--out,-o", args->out, "output file (f32 [n_tokens, n_vocab])")->required();
  cmd->add_option("--attention,-a", args->model.attention, "attention policy")->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--chunk", args->chunk, "prefill chunk size")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies,
                  "per-layer policy A-B=POLICY, repeatable; wins over --attention and native windows");
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage: f16, f32 (exact) or int8 (half the bytes)")->capture_default_str();
  cmd->add_option("--kv-budget", args->model.kv_budget, "KV pool size, e.g. 512M");
  cmd->add_flag("--reference", args->reference,
                "use the slow scalar reference forward pass (f32 activations, naive attention)");
  add_shard_options(cmd, args->shard);
  cmd->callback([args, &exit_code] {
    exit_code = score(*args);
  });
}

}  // namespace stride::cli
