// `stride stream`: push a long token stream (up to millions of tokens) through
// one sequence, in prefill chunks, and report at checkpoints what a user of
// a fixed-size cache cares about: KV bytes held, resident memory, decode
// speed at that depth, and perplexity of the most recent tokens. Under
// `rswa` the KV bytes stop growing once the window is full, so the stream can
// run forever; under `dense` the pool budget is the limit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/step_runner.h"
#include "serving/kv_metrics.h"
#include "cli/cli_common.h"
#include "cli/head_type_option.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "eval/memory_plan.h"
#include "loader/model_source.h"

namespace stride::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct StreamArgs {
  ModelRunOptions model;
  int64_t tokens = 1 << 20;
  std::string checkpoints = "1024,8192,131072,1048576";
  std::string text_file;
  std::string json_out;
  int chunk = 512;
  int decode_steps = 16;
  bool ppl = true;  // logits of every position (the LM head costs ~20% more)
};

int64_t current_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

// Mean negative log-likelihood of ids[1..n] given logits[0..n-1] rows.
//   logits: [n, n_vocab]
double sum_nll(const float* logits, const int32_t* next_ids, int n, int n_vocab) {
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const float* row = logits + (size_t)i * n_vocab;
    const float mx = *std::max_element(row, row + n_vocab);
    double z = 0;
    for (int v = 0; v < n_vocab; ++v) z += std::exp((double)row[v] - mx);
    total += -((double)row[next_ids[i]] - mx - std::log(z));
  }
  return total;
}

Expected<std::vector<int32_t>> stream_ids(const Engine& engine, const std::string& path, int64_t n) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path + " (make it with: python3 scripts/oracles/make_long_text.py)");
  std::stringstream ss;
  ss << f.rdbuf();
  const Tokenizer* tok = engine.tokenizer();
  if (!tok) return InvalidArgument("stream needs a GGUF model with a tokenizer");
  const std::vector<int32_t> doc = tok->encode(ss.str(), false);
  if (doc.size() < 2) return InvalidArgument(path + " holds no text");
  // The document repeats until n tokens: memory and speed do not care, and
  // the perplexity curve shows it (repeats are easier to predict).
  std::vector<int32_t> ids;
  ids.reserve((size_t)n);
  if (tok->add_bos_default()) ids.push_back(tok->bos_id());
  while ((int64_t)ids.size() < n) ids.insert(ids.end(), doc.begin(), doc.begin() + std::min<int64_t>(doc.size(), n - ids.size()));
  return ids;
}

// "1024,4096,..." -> the depths up to --tokens, ascending.
Expected<std::vector<int64_t>> parse_checkpoints(const StreamArgs& a) {
  std::vector<int64_t> checkpoints;
  std::stringstream ss(a.checkpoints);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1) return InvalidArgument("bad checkpoint '" + item + "'");
    if (v <= a.tokens) checkpoints.push_back(v);
  }
  std::sort(checkpoints.begin(), checkpoints.end());
  return checkpoints;
}

// An engine whose pool holds what the policy can hold at the stream's full
// length (plus decode slack), unless --kv-budget says otherwise.
Expected<std::unique_ptr<Engine>> stream_engine(const StreamArgs& a, int64_t context) {
  auto policy = parse_policy(a.model.attention);
  if (!policy) return policy.status();
  auto source = open_model(a.model.model, a.model.rope);
  if (!source) return source.status();
  const ModelConfig c = (*source)->config;
  LayerPolicyOverrides overrides;
  for (const std::string& t : a.model.layer_policies) {
    STRIDE_RETURN_IF_ERROR(parse_layer_override(t, c.n_layer, overrides));
  }
  // The pool holds what the policy can hold at the full length (plus decode slack).
  MemoryPlanInput in;
  in.config = c;
  in.layer_policies = resolve_layer_policies(c, *policy, overrides);
  in.context = context;
  in.page_size = a.model.page_size;
  in.prefill_chunk = a.chunk;
  auto storage = parse_kv_storage(a.model.kv_type);
  if (!storage) return storage.status();
  in.kv_storage = *storage;
  const MemoryPlan plan = plan_memory(in);
  (*source).reset();  // the engine maps the file again

  auto opts = to_engine_options(a.model, in.context);
  if (!opts) return opts.status();
  opts->prefill_chunk = a.chunk;
  opts->max_context = in.context + a.chunk;
  // Two pages per layer of slack: kv_bytes_for_tokens rounds one page up and adds one.
  if (a.model.kv_budget.empty())
    opts->kv_budget_bytes = plan.kv_bytes + kv_bytes_for_tokens(c, a.model.page_size, a.model.page_size, in.kv_storage);
  return Engine::create(*opts);
}

// One checkpoint's figures; the KV counters under their metric names (serving/kv_metrics.h).
nlohmann::json checkpoint_row(Engine& engine, int64_t depth, double decode_tok_s, double prefill_tok_s) {
  const KvStats ks = engine.kv().stats();
  nlohmann::json row;
  row["depth"] = depth;
  row["kv_bytes"] = ks.pages_used * ks.bytes_per_page;
  row["kv_pages"] = ks.pages_used;
  row["rss_bytes"] = current_rss_bytes();
  row["peak_rss_bytes"] = peak_rss_bytes();
  row["decode_tok_s"] = decode_tok_s;
  row["prefill_tok_s"] = prefill_tok_s;
  serving::for_each_kv_metric(ks, [&](const char* name, const char*, const char*, int64_t value) { row["kv"][name] = value; });
  return row;
}

int stream(const StreamArgs& a) {
  if (a.tokens < 2 || a.chunk < 1 || a.decode_steps < 1) return fail("--tokens >= 2, --chunk >= 1, --decode-steps >= 1");
  auto checkpoints_or = parse_checkpoints(a);
  if (!checkpoints_or) return fail(checkpoints_or.status());
  const std::vector<int64_t> checkpoints = std::move(*checkpoints_or);
  const int64_t context = a.tokens + a.decode_steps * (int64_t)checkpoints.size() + 1;
  auto created = stream_engine(a, context);
  if (!created) return fail(created.status());
  Engine& engine = **created;
  const int n_vocab = engine.config().n_vocab;
  const std::string text_path = a.text_file.empty()
                                    ? std::string(std::getenv("HOME") ? std::getenv("HOME") : ".") + "/.cache/stride/debian-reference.txt"
                                    : a.text_file;
  auto ids = stream_ids(engine, text_path, context);
  if (!ids) return fail(ids.status());

  auto sid = engine.kv().add_sequence();
  if (!sid) return fail(sid.status());
  // [chunk, n_vocab] for perplexity, else [1, n_vocab]: a chunk of Qwen's vocabulary is ~300 MB.
  std::vector<float> logits((size_t)(a.ppl ? a.chunk : 1) * n_vocab);
  nlohmann::json rows = nlohmann::json::array();
  int64_t pos = 0;
  double window_nll = 0;
  int64_t window_count = 0;
  const auto t_start = Clock::now();
  auto t_prefill = Clock::duration::zero();
  int64_t prefill_tokens = 0;
  size_t next_cp = 0;
  while (pos < a.tokens) {
    const int64_t stop = next_cp < checkpoints.size() ? checkpoints[next_cp] : a.tokens;
    const int n = (int)std::min<int64_t>(a.chunk, stop - pos);
    const auto t0 = Clock::now();
    Status st = run_sequence(engine.model(), engine.kv(), *sid, ids->data() + pos, n, a.ppl, logits.data(), engine.pool());
    if (!st.ok()) return fail(st);
    t_prefill += Clock::now() - t0;
    prefill_tokens += n;
    if (a.ppl) {
      window_nll += sum_nll(logits.data(), ids->data() + pos + 1, n, n_vocab);
      window_count += n;
    }
    pos += n;
    if (next_cp >= checkpoints.size() || pos != checkpoints[next_cp]) continue;
    ++next_cp;
    // Decode speed at this depth: single-token steps on the stream's own tokens.
    const auto t1 = Clock::now();
    for (int i = 0; i < a.decode_steps; ++i) {
      st = run_sequence(engine.model(), engine.kv(), *sid, ids->data() + pos, 1, false, logits.data(), engine.pool());
      if (!st.ok()) return fail(st);
      ++pos;
    }
    const double decode_s = std::chrono::duration<double>(Clock::now() - t1).count();
    nlohmann::json row = checkpoint_row(engine, pos, a.decode_steps / decode_s,
                                        prefill_tokens / std::chrono::duration<double>(t_prefill).count());
    row["ppl_since_last_checkpoint"] = window_count ? std::exp(window_nll / window_count) : 0.0;
    row["elapsed_s"] = std::chrono::duration<double>(Clock::now() - t_start).count();
    std::printf("%s\n", row.dump().c_str());
    std::fflush(stdout);
    rows.push_back(row);
    window_nll = 0;
    window_count = 0;
    prefill_tokens = 0;
    t_prefill = Clock::duration::zero();
  }
  engine.kv().remove_sequence(*sid);
  nlohmann::json report;
  report["model"] = a.model.model;
  report["attention"] = a.model.attention;
  report["threads"] = engine.pool().size();
  report["tokens"] = pos;
  report["kv_budget_bytes"] = engine.kv().stats().pages_total * engine.kv().stats().bytes_per_page;
  report["checkpoints"] = rows;
  if (!a.json_out.empty()) {
    std::ofstream out(a.json_out);
    out << report.dump(1) << "\n";
    if (!out) return fail("cannot write " + a.json_out);
  }
  return 0;
}

}  // namespace

void add_stream_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<StreamArgs>();
  CLI::App* cmd = app.add_subcommand(
      "stream", "Stream a long text (to 1M+ tokens) through one sequence; KV bytes, RSS, decode tok/s and perplexity at checkpoints");
  cmd->add_option("--model,-m", args->model.model, "GGUF file")->required();
  add_rope_options(cmd, args->model.rope);
  add_head_type_option(cmd, args->model.head_type);
  cmd->add_option("--attention,-a", args->model.attention, "policy for global layers, e.g. rswa:sinks=4,window=1020")
      ->capture_default_str();
  cmd->add_option("--tokens,-n", args->tokens, "tokens to stream")->capture_default_str();
  cmd->add_option("--checkpoints", args->checkpoints, "depths at which to report (comma-separated)")->capture_default_str();
  cmd->add_option("--text", args->text_file, "text to stream, repeated as needed (default: the Debian reference)");
  cmd->add_option("--chunk", args->chunk, "prefill chunk tokens")->capture_default_str();
  cmd->add_option("--decode-steps", args->decode_steps, "single-token steps timed at each checkpoint")->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies, "per-layer policy A-B=POLICY, repeatable");
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage")->capture_default_str();
  cmd->add_option("--kv-budget", args->model.kv_budget, "KV pool size (default: what the policy can hold)");
  cmd->add_option("--kv-offload-bytes", args->model.kv_offload,
                  "offload tier size (e.g. 2G): evicted prefix pages and, with topk resident=N, cold top-k pages");
  cmd->add_option("--kv-offload-file", args->model.kv_offload_file, "back the offload tier with this scratch file (default: RAM)");
  cmd->add_option("--json", args->json_out, "write the report here");
  cmd->add_flag("!--no-ppl", args->ppl, "skip perplexity (only the last position's logits are computed)");
  cmd->callback([args, &exit_code] { exit_code = stream(*args); });
}

}  // namespace stride::cli
