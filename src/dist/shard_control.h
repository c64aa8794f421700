#pragma once
// The control channel of `stride serve`'s shard set: rank 0 (the front door
// and scheduler) tells the workers, which have no requests of their own, what
// to run, over the shard group itself. Each message is a broadcast from rank 0
// of a fixed header (kind, payload bytes), then of the payload. While it has
// no work rank 0 sends heartbeats, so a worker waiting for work never reaches
// the group's deadline, and a worker that died is found while idle.
// The shard layout is not sent: every rank cuts the prompt the same way
// (every_rank_positions, from the prompt's length, the world and the job's
// shard_tokens).
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/shard_generate.h"
#include "dist/shard_group.h"

namespace stride::dist {

struct ShardJob {
  enum class Kind : int32_t { Heartbeat = 0, Generate = 1 };
  Kind kind = Kind::Heartbeat;
  std::string request_id;       // for the workers' logs
  std::vector<int32_t> prompt;  // token ids
  ShardGenerateOptions options;
};

// Rank 0's side.
Status send_job(ShardGroup& group, const ShardJob& job);
// A worker's side: waits up to the group's deadline for rank 0's next message.
Expected<ShardJob> receive_job(ShardGroup& group);

// The job's payload as bytes and back (the wire format; exposed for tests).
std::string encode_job(const ShardJob& job);
Expected<ShardJob> decode_job(int32_t kind, const std::string& payload);

}  // namespace stride::dist
