#pragma once
// The options that make a command one rank of a shard set (`stride score`,
// `stride run`, `stride serve`: --shard-world, --shard-rank, --rendezvous ...), and the
// group they connect (the Gloo build only).
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"

#ifdef STRIDE_WITH_GLOO
#include "dist/shard_group.h"
#endif

namespace stride::cli {

struct ShardArgs {
  int world = 1;
  int rank = 0;
  std::string rendezvous;  // empty: not sharded
  std::string prefix;      // keys in the rendezvous store: the command's name unless given
  std::string host = "127.0.0.1";
  int timeout_ms = 30000;
  int chunk = 0;  // this rank's prefill chunk, 0: the engine's
  // The shard layout (kv/shard_layout.h): kAutoShardTokens (-1, "auto") from the context, 0 balanced,
  // else runs of this many tokens; resolved once by each command (resolve_shard_tokens).
  int64_t shard_tokens = -1;

  bool sharded() const { return !rendezvous.empty(); }  // with a rendezvous even one rank runs the sharded path
};

void add_shard_options(CLI::App* cmd, ShardArgs& a);

// InvalidArgument for a rank out of range or a world without rendezvous;
// Unsupported in a build without Gloo.
Status check_shard_args(const ShardArgs& a);

#ifdef STRIDE_WITH_GLOO
dist::ShardGroupOptions shard_group_options(const ShardArgs& a);
// Connects this rank (SIGPIPE ignored first: a dead peer's socket fails the
// operation instead of killing the process) and says so on stderr.
Expected<std::unique_ptr<dist::ShardGroup>> connect_shard_group(const ShardArgs& a);
#endif

}  // namespace stride::cli
