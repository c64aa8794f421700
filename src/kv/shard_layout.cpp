#include "kv/shard_layout.h"

#include "attention/work_partition.h"

namespace stride {

namespace {

int64_t whole_pages(int64_t tokens, int page_size) { return (tokens + page_size - 1) / page_size * page_size; }

}  // namespace

int64_t automatic_shard_tokens(int64_t max_context, int world, int page_size) {
  if (world < 2 || page_size < 1 || max_context < 1) return 0;
  const int64_t segment = (int64_t)kSegmentPages * page_size;
  return max_context / world / segment * segment;
}

int64_t resolve_shard_tokens(int64_t requested, int64_t max_context, int world, int page_size) {
  return requested == kAutoShardTokens ? automatic_shard_tokens(max_context, world, page_size) : requested;
}

int64_t shard_stride(int64_t n, int world, int page_size, int64_t shard_tokens) {
  const int64_t fixed = whole_pages(shard_tokens, page_size);
  return fixed > 0 && (world - 1) * fixed < n ? fixed : whole_pages((n + world - 1) / world, page_size);
}

}  // namespace stride
