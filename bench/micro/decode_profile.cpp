// Per-op profile of decode: prefills a prompt of pseudo-random ids, then times
// every op of each single-token step (model/op_profile.h) and prints one JSON
// line: per op its share of the step, milliseconds and weight bytes per token,
// and the GB/s those bytes were read at; the step's wall and process CPU time.
// bench/decode_profile.py runs it at 1 and 2 threads, interleaved, next to
// the triad of machine_peak.
// Usage: decode_profile MODEL THREADS [PROMPT_TOKENS=512] [DECODE_TOKENS=128]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cpu_path_env.h"
#include "engine/engine.h"
#include "model/op_profile.h"

using namespace stride;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
         1e-6 * (double)u.ru_stime.tv_usec;
}

void print_json(const OpProfile& p, const GenerateResult& r, int threads, double decode_cpu_s) {
  const double steps = (double)std::max<int64_t>(1, p.steps());
  double op_seconds = 0;
  for (const OpProfile::Entry& e : p.entries()) op_seconds += e.seconds;
  const double decoded = (double)std::max<size_t>(1, r.generated_ids.size() - 1);
  std::printf("{\"threads\": %d, \"prompt_tokens\": %d, \"decode_steps\": %lld, \"decode_tok_s\": %.3f, "
              "\"token_ms\": %.4f, \"step_ms\": %.4f, \"glue_ms\": %.4f, \"decode_cpu_ms_per_token\": %.4f, "
              "\"ops\": [",
              threads, r.prompt_tokens, (long long)p.steps(), decoded / r.decode_seconds,
              1e3 * r.decode_seconds / decoded,
              1e3 * p.step_seconds() / steps, 1e3 * (p.step_seconds() - op_seconds) / steps,
              1e3 * decode_cpu_s / decoded);
  const char* sep = "";
  for (const OpProfile::Entry& e : p.entries()) {
    std::printf("%s{\"op\": \"%s\", \"calls_per_token\": %.2f, \"ms\": %.4f, \"cpu_ms\": %.4f, "
                "\"share\": %.4f, \"bytes\": %lld, \"gbs\": %.3f, \"gbs_cpu\": %.3f}",
                sep, e.op.c_str(), (double)e.calls / steps, 1e3 * e.seconds / steps, 1e3 * e.cpu_seconds / steps,
                e.seconds / p.step_seconds(), (long long)((double)e.bytes / steps),
                e.seconds > 0 ? 1e-9 * (double)e.bytes / e.seconds : 0.0,
                e.cpu_seconds > 0 ? 1e-9 * (double)e.bytes / e.cpu_seconds : 0.0);
    sep = ", ";
  }
  std::printf("]}\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL THREADS [PROMPT_TOKENS=512] [DECODE_TOKENS=128]\n", argv[0]);
    return 2;
  }
  if (!bench::select_cpu_path_from_env()) return 1;
  const int threads = std::atoi(argv[2]);
  const int prompt_tokens = argc > 3 ? std::atoi(argv[3]) : 512;
  const int decode = argc > 4 ? std::atoi(argv[4]) : 128;
  EngineOptions o;
  o.model_path = argv[1];
  o.threads = threads;
  o.max_context = prompt_tokens + decode + 8;
  o.show_progress = false;
  o.prefix_cache = false;
  auto engine = Engine::create(o);
  if (!engine) {
    std::fprintf(stderr, "error: %s\n", engine.status().message().c_str());
    return 1;
  }
  std::mt19937 rng(7);
  std::vector<int32_t> ids((size_t)prompt_tokens);
  for (int32_t& id : ids) id = (int32_t)(rng() % (uint32_t)std::min<int64_t>((*engine)->config().n_vocab, 30000));
  GenerateOptions g;
  g.ignore_eos = true;
  g.sampling.temperature = 0;
  // The prefill alone first, for its CPU time: decode's is the rest of the full run's.
  g.max_tokens = 1;
  double cpu0 = cpu_seconds();
  auto prefill_only = (*engine)->generate(ids, g, [](const std::string&) {});
  const double prefill_cpu = cpu_seconds() - cpu0;
  OpProfile profile;
  (*engine)->model().set_op_profile(&profile);  // counts single-token steps only: the decode
  g.max_tokens = decode + 1;  // the first token comes from the prefill
  cpu0 = cpu_seconds();
  auto r = (*engine)->generate(ids, g, [](const std::string&) {});
  const double decode_cpu = cpu_seconds() - cpu0 - prefill_cpu;
  (*engine)->model().set_op_profile(nullptr);
  if (!prefill_only || !r) {
    std::fprintf(stderr, "error: %s\n", (r ? prefill_only.status() : r.status()).message().c_str());
    return 1;
  }
  print_json(profile, *r, threads, decode_cpu);
  return 0;
}
