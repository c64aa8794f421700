// End-to-end prefill/decode timing of one long prompt, for bench/compare.py.
// The CLI takes prompt ids on its command line, which Linux caps at 128 KiB
// per argument (~20K ids); this driver reads them from a file instead.
// Usage: bench_engine MODEL IDS_FILE ATTENTION THREADS DECODE [KV_BUDGET_MB]
//   -> one JSON line: prompt_tokens, prefill_tok_s, decode_tok_s, peak_kv_bytes.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "engine/engine.h"

using namespace stride;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s MODEL IDS_FILE ATTENTION THREADS DECODE [KV_BUDGET_MB]\n", argv[0]);
    return 2;
  }
  std::vector<int32_t> ids;
  {
    std::ifstream f(argv[2]);
    for (int64_t v; f >> v;) ids.push_back((int32_t)v);
  }
  auto policy = parse_policy(argv[3]);
  if (!policy || ids.empty()) {
    std::fprintf(stderr, "bad policy or empty ids file\n");
    return 2;
  }
  const int decode = std::atoi(argv[5]);
  EngineOptions o;
  o.model_path = argv[1];
  o.attention = *policy;
  o.threads = std::atoi(argv[4]);
  o.max_context = (int64_t)ids.size() + decode + 8;
  o.show_progress = false;
  if (argc > 6) o.kv_budget_bytes = std::atoll(argv[6]) << 20;
  auto engine = Engine::create(o);
  if (!engine) {
    std::fprintf(stderr, "error: %s\n", engine.status().message().c_str());
    return 1;
  }
  GenerateOptions g;
  g.max_tokens = decode + 1;  // the first token comes from the prefill
  g.ignore_eos = true;
  g.sampling.temperature = 0;
  auto r = (*engine)->generate(ids, g, [](const std::string&) {});
  if (!r) {
    std::fprintf(stderr, "error: %s\n", r.status().message().c_str());
    return 1;
  }
  const double decoded = r->generated_ids.empty() ? 0 : (double)r->generated_ids.size() - 1;
  std::printf("{\"prompt_tokens\": %d, \"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, "
              "\"prefill_seconds\": %.3f, \"decode_seconds\": %.3f, \"peak_kv_bytes\": %lld, "
              "\"peak_rss_bytes\": %lld}\n",
              r->prompt_tokens, r->prompt_tokens / r->prefill_seconds, decoded / r->decode_seconds,
              r->prefill_seconds, r->decode_seconds, (long long)r->peak_kv_bytes,
              (long long)peak_rss_bytes());
  return 0;
}
