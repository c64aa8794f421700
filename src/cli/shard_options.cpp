#include "cli/shard_options.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <limits>
#include <map>
#include <string>


namespace stride::cli {

void add_shard_options(CLI::App* cmd, ShardArgs& a) {
  if (a.prefix.empty()) a.prefix = cmd->get_name();
  auto* world = cmd->add_option("--shard-world", a.world,
                                "ranks of a shard set that split the prompt by position (1 with --rendezvous: the sharded path on one rank)")
                    ->check(CLI::Range(1, 4096))
                    ->capture_default_str();
  cmd->add_option("--shard-rank", a.rank, "this process's rank, 0 .. world-1")
      ->check(CLI::NonNegativeNumber)
      ->needs(world);
  cmd->add_option("--rendezvous", a.rendezvous, "where the ranks meet: file:/dir or redis://host[:port]")
      ->needs(world);
  cmd->add_option("--shard-prefix", a.prefix, "the shard set's keys in the rendezvous store (run, score: new per start; serve: kept, generations go under it)")
      ->capture_default_str();
  cmd->add_option("--shard-host", a.host, "the address the other ranks reach this rank at")
      ->capture_default_str();
  cmd->add_option("--shard-timeout-ms", a.timeout_ms, "deadline of connecting and of every exchange")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--shard-chunk", a.chunk,
                  "tokens of this rank's shard run through a layer at a time in prefill (0: the prefill chunk)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--shard-tokens", a.shard_tokens,
                  "every rank but the last holds this many prompt tokens (rounded up to pages) when the prompt is "
                  "longer than world-1 of them, so a longer prompt with the same prefix reuses each rank's cached "
                  "pages; a shorter prompt, or 0: cut where every rank's prefill costs about the same, on 256-token "
                  "segments; auto (the default): the context over the "
                  "world, rounded down to 256-token kernel segments (serve: rank 0's is sent to the set)")
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"auto", "-1"}}))
      ->check(CLI::Range((int64_t)-1, std::numeric_limits<int64_t>::max()))
      ->default_str("auto");
}

Status check_shard_args(const ShardArgs& a) {
  if (a.rank >= a.world) return InvalidArgument("--shard-rank must be below --shard-world");
  if (a.world > 1 && !a.sharded()) return InvalidArgument("--shard-world needs --rendezvous");
#ifndef STRIDE_WITH_GLOO
  if (a.sharded()) return Unsupported("this build has no context parallelism (Gloo was not found at build time)");
#endif
  return Status::Ok();
}

#ifdef STRIDE_WITH_GLOO
dist::ShardGroupOptions shard_group_options(const ShardArgs& a) {
  dist::ShardGroupOptions go;
  go.rank = a.rank;
  go.world = a.world;
  go.rendezvous = a.rendezvous;
  go.prefix = a.prefix;
  go.listen_host = a.host;
  go.timeout = std::chrono::milliseconds(a.timeout_ms);
  return go;
}

Expected<std::unique_ptr<dist::ShardGroup>> connect_shard_group(const ShardArgs& a) {
  std::signal(SIGPIPE, SIG_IGN);
  const dist::ShardGroupOptions go = shard_group_options(a);
  STRIDE_ASSIGN_OR_RETURN(auto group, dist::ShardGroup::connect(go));
  std::fprintf(stderr, "shard rank %d/%d: connected\n", go.rank, go.world);
  return group;
}
#endif

}  // namespace stride::cli
