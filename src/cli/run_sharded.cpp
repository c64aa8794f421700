#include <sys/resource.h>

#include "cli/run_sharded.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "kv/shard_layout.h"
#ifdef STRIDE_WITH_GLOO
#include "dist/shard_generate.h"
#include "dist/shard_score.h"
#include "dist/shard_topk.h"
#endif

namespace stride::cli {

int64_t shard_kv_tokens(int64_t max_prompt_tokens, int world, int page_size, int max_tokens, int64_t shard_tokens) {
  return largest_shard_tokens(max_prompt_tokens, world, page_size, shard_tokens) + max_tokens;
}

int run_sharded(const ShardArgs& shard, Engine& engine, const std::vector<int32_t>& prompt,
                const GenerateOptions& g, bool json) {
#ifndef STRIDE_WITH_GLOO
  (void)shard, (void)engine, (void)prompt, (void)g, (void)json;
  return fail("this build has no context parallelism (Gloo was not found at build time)");
#else
  // Refused on every rank before any rank connects, so none waits for a peer that gave up.
  auto mine = dist::every_rank_positions((int64_t)prompt.size(), shard.world, shard.rank,
                                         engine.kv().config().page_size, shard.shard_tokens,
                                         dist::engine_shard_cost(engine));
  if (!mine) return fail(mine.status());
  if (Status st = dist::check_sharded_policies(engine.layer_policies()); !st.ok()) return fail(st);
  auto group = connect_shard_group(shard);
  if (!group) return fail(group.status());
  auto r = dist::generate_sharded(engine, **group, prompt, g, [](const std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  }, shard.chunk, shard.shard_tokens);
  nlohmann::json j;
  j["shard_rank"] = shard.rank;
  j["shard_world"] = shard.world;
  if (!r) {
    const int rc = fail(r.status());
    if (json) {
      j["error"] = r.status().message();
      j["kv_pages_held"] = engine.kv().stats().pages_used;  // after the sequence was released
      std::printf("\n%s\n", j.dump().c_str());
    }
    return rc;
  }
  std::fputc('\n', stdout);
  if (json) {
    j["generated_ids"] = r->ids;
    j["logprobs"] = r->logprobs;
    j["text"] = r->text;
    j["finish_reason"] = finish_reason_name(r->finish);
    j["prompt_tokens"] = prompt.size();
    j["pos_begin"] = r->shard.pos_begin;
    j["pos_end"] = r->shard.pos_end;
    j["reused_tokens"] = r->reused_tokens;
    j["set_reused_tokens"] = r->set_reused_tokens;
    j["prefill_seconds"] = r->prefill_seconds;
    j["prefill_cpu_seconds"] = r->prefill_cpu_seconds;
    j["decode_seconds"] = r->decode_seconds;
    j["decode_cpu_seconds"] = r->decode_cpu_seconds;
    j["prefill_bytes_sent"] = r->prefill_bytes_sent;
    j["payload_bytes_sent"] = r->payload_bytes_sent;
    // This rank's decode work, every layer of every step (DecodeWork).
    j["decode_calls"] = r->decode_work.calls;
    j["decode_partials"] = r->decode_work.partials;
    j["decode_pages_read"] = r->decode_work.pages_read;
    const KvStats ks = engine.kv().stats();
    j["peak_kv_bytes"] = ks.peak_pages_used * ks.bytes_per_page;
    j["kv_pages_held"] = ks.pages_used;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    j["peak_rss_bytes"] = (int64_t)usage.ru_maxrss * 1024;  // Linux counts kilobytes
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
#endif
}

}  // namespace stride::cli
