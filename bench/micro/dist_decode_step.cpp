// The attention side of a sharded decode step on the root rank, without a
// model: one layer of KEYS random keys in the root's pool (a group of one
// rank, so the root holds the whole shard, as the last rank of a generation
// holds a long one), and CALLS decode calls of the query at KEYS - 1. Prints
// one JSON line: process CPU seconds per call and the DecodeWork counts. Run
// under callgrind with CALLS=0 and CALLS=N, the difference over N is the
// instructions of one call (one layer of one decode step).
// Usage: dist_decode_step POLICY KEYS [CALLS=32] [KV=int8]
#include <stdlib.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "dist/shard_group.h"
#include "dist/sharded_decode.h"
#include "dist/shard_step.h"
#include "kernels/rope_table.h"
#include "random_weights.h"

using namespace stride;
using namespace stride::dist;

namespace {

// SmolLM2-135M's attention: 9 query heads over 3 kv heads of 64, pages of 32.
constexpr int kHeads = 9, kKvHeads = 3, kDim = 64, kPage = 32;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s POLICY KEYS [CALLS=32] [KV=int8]\n", argv[0]);
    return 2;
  }
  const auto policy = parse_policy(argv[1]);
  const int64_t keys = std::atoll(argv[2]);
  const int calls = argc > 3 ? std::atoi(argv[3]) : 32;
  const auto storage = parse_kv_storage(argc > 4 ? argv[4] : "int8");
  if (!policy.ok() || !storage.ok() || keys < 1 || calls < 0) {
    std::fprintf(stderr, "bad policy, KV type, keys or calls\n");
    return 2;
  }
  const KvShard shard{0, keys};
  auto pool = KvPool::create({kKvHeads, kDim, kDim, kPage, *storage}, shard.pages(kPage));
  if (!pool.ok()) return 1;
  const int64_t row = (int64_t)kKvHeads * kDim;
  for (int64_t first = 0; first < keys; first += kPage) {
    const int n = (int)std::min<int64_t>(kPage, keys - first);
    const std::vector<float> k = bench::random_normal((size_t)(n * row), (unsigned)first);
    const std::vector<float> v = bench::random_normal((size_t)(n * row), (unsigned)first + 1);
    (*pool)->store((int32_t)(first / kPage), 0, n, k.data(), row, v.data(), row, first);
  }
  const RopeTable rope = RopeTable::plain(10000.0, kDim, 1.0, false);
  AttentionParams params;
  params.n_head = kHeads;
  params.rope = &rope;

  char dir[] = "/tmp/stride-decode-step-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  std::signal(SIGPIPE, SIG_IGN);
  ShardGroupOptions o;
  o.rendezvous = std::string("file:") + dir;
  auto group = ShardGroup::connect(o);
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", group.status().to_string().c_str());
    return 1;
  }
  const ShardedLayer layer{pool->get(), shard, *policy, params};
  std::vector<float> q = bench::random_normal((size_t)kHeads * kDim, 7), out((size_t)kHeads * kDim);
  ThreadPool threads(1);
  DecodeWork work;
  const double cpu0 = process_cpu_seconds();
  for (int c = 0; c < calls; ++c) {
    const Status st = sharded_decode(**group, layer, q.data(), 1, keys - 1, out.data(), threads, 0, {}, &work);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.to_string().c_str());
      return 1;
    }
  }
  const double cpu = process_cpu_seconds() - cpu0;
  std::filesystem::remove_all(dir);
  std::printf("{\"policy\": \"%s\", \"keys\": %lld, \"calls\": %d, \"cpu_us_per_call\": %.2f, "
              "\"partials_per_call\": %.2f, \"pages_read_per_call\": %.2f}\n",
              argv[1], (long long)keys, calls, calls ? 1e6 * cpu / calls : 0.0,
              calls ? (double)work.partials / calls : 0.0, calls ? (double)work.pages_read / calls : 0.0);
  return 0;
}
